"""Reads for exports: the export list and a simulated run's quality (README.md)."""
