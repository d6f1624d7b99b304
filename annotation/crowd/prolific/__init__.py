"""Prolific, the paid crowd researchers in this field recruit on (one study per batch)."""
