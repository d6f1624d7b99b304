import os

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs a loop

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

TESTS = Path(__file__).resolve().parent
SAMPLE = TESTS.parent / "data" / "sample" / "coco_captions_val2014.subset.json"


@pytest.fixture
def sample_path() -> str:
    return str(SAMPLE)


@pytest.fixture
def reference_data() -> Path:
    """Real BISON reference files copied into the repository (see data/sample/README.md)."""
    return TESTS / "data"
