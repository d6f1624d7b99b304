"""Datasets: import, rows, images and their safe fetching (README.md beside this file)."""
