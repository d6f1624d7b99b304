"""The flows' run settings (each flow's settings.py), as the new-run form shows them."""

import importlib

import pytest


@pytest.mark.parametrize("flow", ["eccv", "bison"])
def test_the_aggregation_help_warns_about_dawid_skene(flow):
    """Dawid-Skene is offered on the run form; its help says it is no better than majority."""
    settings = importlib.import_module(f"annotation.flows.{flow}.settings").SETTINGS
    aggregation = next(s for s in settings if s.key == "aggregation")
    assert "dawid_skene" in aggregation.choices
    assert "Dawid-Skene is no better than majority" in aggregation.help
    assert "prefer majority" in aggregation.help
