"""Benchmarks: each module runs its baseline in the same run and prints a Markdown table."""
