"""The audit trail every writer uses: hash-chained records per org on the AUDIT stream."""
