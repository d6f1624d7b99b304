"""The players of each provider's workers and remote side, from the providers' packages (each
ships a `testing.py`), so the same contract tests run against every provider."""

from __future__ import annotations

import importlib
from typing import Any

from annotation.crowd.mturk.testing import SUBMIT_TO, MTurkDriver, fake_id, stubbed_mturk
from annotation.crowd.testing import ServerDriver
from annotation.providers import provider_for

__all__ = ["SUBMIT_TO", "MTurkDriver", "ServerDriver", "driver_for", "fake_id", "stubbed_mturk"]


def driver_for(name: str, http: Any) -> Any:
    """The player a provider's package ships (`annotation/crowd/<name>/testing.py`)."""
    package = type(provider_for(name)).__module__.rsplit(".", 1)[0]
    return importlib.import_module(f"{package}.testing").driver(http)
