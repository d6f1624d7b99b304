"""The worker path: claim, answer, count, review, re-offer (README.md beside this file)."""
