"""Selectors: reads, aggregated in the database."""
