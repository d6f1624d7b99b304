"""Reads of datasets: the data browser and which images are there (README.md)."""
