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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files marked `long` first, each file's tests kept together and in order: `make test`
    hands whole files to its processes in this order (xdist's loadfile with
    --no-loadscope-reorder), so the minutes-long end-to-end files start early and the short
    ones fill in around them, instead of one process running a long file at the end while the
    others wait."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)
