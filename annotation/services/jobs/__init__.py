"""Background jobs: their rows, steps, timing, recovery, and calls made once (README.md)."""
