"""Reads for reviewing work: reasons, agreement, gold, follow-ups (README.md)."""
