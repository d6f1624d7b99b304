"""Runs and their batches, projects, texts, inputs and gold items (README.md)."""
