"""Exports and the release's documents: datasheet, dataset card, Croissant (README.md)."""
