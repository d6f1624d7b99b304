"""The local provider's player for the contract tests: workers act through the services."""

from __future__ import annotations

from typing import Any

from tests.annotation.crowd.testing import ServerDriver


def driver(http: Any) -> ServerDriver:
    return ServerDriver("local")
