"""The ladder's rules: levels and where they apply, the decision for one reply, windows.
No I/O; the time is an argument."""
