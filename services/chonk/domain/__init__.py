"""The manager agents' rules (manager-agents.md) as pure functions: charters and the
allowlist matrix, one run's configuration, the executor's checks at every handoff, the
grounding check, receipts, the tone dial, memory's rules."""
