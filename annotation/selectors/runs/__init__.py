"""Reads for a run's and a batch's pages and the API's lists (README.md)."""
