"""Shared paths to the real data samples used by the pipeline tests."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COCO_SAMPLE = REPO / "data" / "sample" / "coco_captions_val2014.subset.json"
# Read-only reference data beside the repository (see ../shared/data/README.md).
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    """The shared reference data folder; tests needing it skip when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"reference data not found at {SHARED_DATA}")
    return SHARED_DATA


# tests/conftest.py sets up Django, PostgreSQL and Celery for every test under tests/.
# Pipeline code is pure, so these same-named fixtures replace those autouse ones here:
# the pipeline tests then run with or without pytest-django and without a database.
@pytest.fixture(scope="session", autouse=True)
def _require_postgres() -> None:
    """No database is needed by pipeline tests."""


@pytest.fixture(scope="session", autouse=True)
def _celery_in_process() -> None:
    """No Celery is needed by pipeline tests."""


@pytest.fixture(autouse=True)
def _media_root() -> None:
    """No Django settings are needed by pipeline tests."""
