import os

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs a loop

import pytest  # noqa: E402

from tests.factories import placeholder_images  # noqa: E402

SAMPLE = os.path.join(
    os.path.dirname(__file__), "..", "data", "sample", "coco_captions_val2014.subset.json"
)


@pytest.fixture(scope="session", autouse=True)
def _require_postgres(django_db_blocker):
    from django.db import connection

    if connection.vendor != "postgresql" and not os.environ.get("CROWDVL_TESTS_ALLOW_SQLITE"):
        pytest.exit(
            "The tests run against PostgreSQL and Redis: use `make test` (it sets DATABASE_URL "
            "and CELERY_BROKER_URL), or set them yourself.",
            returncode=2,
        )


@pytest.fixture(scope="session", autouse=True)
def _celery_in_process():
    """Most tests run tasks in-process; tests/annotation/test_celery_worker.py uses a real worker."""
    from config import celery_app

    celery_app.conf.task_always_eager = True
    celery_app.conf.task_eager_propagates = True
    yield


@pytest.fixture(autouse=True)
def _media_root(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")


@pytest.fixture
def sample_path():
    return os.path.abspath(SAMPLE)


@pytest.fixture
def run_on_commit(django_capture_on_commit_callbacks):
    """Run on_commit callbacks (task enqueues) inside a test's transaction."""

    def wrap(fn, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return fn(*args, **kwargs)

    return wrap


@pytest.fixture
def image_dir(tmp_path):
    return placeholder_images(tmp_path / "images")
