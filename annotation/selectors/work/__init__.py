"""Reads for the worker's task page: the HIT, its images, texts and drafts (README.md)."""
