"""Reads of money: what was paid and what a batch will cost (README.md)."""
