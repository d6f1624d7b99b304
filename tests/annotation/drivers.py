"""The players of each provider's workers and remote side
(`tests/annotation/crowd/<name>/player.py`, one per provider), so the same contract tests run
against every provider."""

from __future__ import annotations

import importlib
from typing import Any

from annotation.providers import provider_for
from tests.annotation.crowd.mturk.player import SUBMIT_TO, MTurkDriver, fake_id, stubbed_mturk
from tests.annotation.crowd.testing import ServerDriver

__all__ = ["SUBMIT_TO", "MTurkDriver", "ServerDriver", "driver_for", "fake_id", "stubbed_mturk"]


def driver_for(name: str, http: Any) -> Any:
    """The player of a provider (`tests/annotation/crowd/<folder>/player.py`, named after the
    provider's package folder)."""
    folder = type(provider_for(name)).__module__.split(".")[2]
    return importlib.import_module(f"tests.annotation.crowd.{folder}.player").driver(http)
