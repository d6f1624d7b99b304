"""Operating it: server errors leave a trace with DEBUG off, and /health/ says what works."""

import io
import logging

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.mark.urls("tests.annotation.boom_urls")
def test_a_server_error_is_logged_with_its_traceback_when_debug_is_off(settings):
    settings.DEBUG = False
    logger = logging.getLogger("django.request")
    console = next(h for h in logger.handlers if isinstance(h, logging.StreamHandler))
    old = console.setStream(io.StringIO())  # where the server's stderr would be
    try:
        response = Client(raise_request_exception=False).get("/boom/")
        err = console.stream.getvalue()
    finally:
        console.setStream(old)
    assert response.status_code == 500
    assert "Traceback" in err and "RuntimeError: a bug on the worker's path" in err
    assert "ERROR django.request" in err


def test_health_reports_each_part(client, settings, tmp_path):
    response = client.get("/health/")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "database": "ok",
        "broker": "ok",
        "storage": "ok",
    }
    # A storage the server cannot write to is an error, named, with a 503.
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    settings.MEDIA_ROOT = str(blocked / "media")
    response = client.get("/health/")
    assert response.status_code == 503, (settings.MEDIA_ROOT, response.json())
    assert response.json()["storage"] == "error" and response.json()["database"] == "ok"


def test_a_broker_that_is_down_is_reported(client, settings):
    from config import celery_app

    old = celery_app.conf.broker_url, celery_app.conf.broker_write_url
    down = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    celery_app.conf.broker_url = celery_app.conf.broker_write_url = down
    try:
        response = client.get("/health/")
    finally:
        celery_app.conf.broker_url, celery_app.conf.broker_write_url = old
    assert response.status_code == 503 and response.json()["broker"] == "error"


def test_database_connections_persist_with_health_checks_by_default():
    from django.conf import settings

    db = settings.DATABASES["default"]
    assert db["CONN_MAX_AGE"] == 60 and db["CONN_HEALTH_CHECKS"] is True


def test_the_operations_guide_backs_up_restores_and_upgrades_with_what_exists():
    """docs/operations.md's backup, restore and upgrade procedures name only `manage.py`
    commands this project has and `make` targets its Makefile defines."""
    import re
    from pathlib import Path

    from django.conf import settings
    from django.core.management import get_commands

    root = Path(settings.BASE_DIR)
    guide = (root / "docs" / "operations.md").read_text()
    backup = guide.split("## Backup and restore", 1)[1].split("\n## ", 1)[0]
    upgrade = guide.split("## Upgrading", 1)[1].split("\n## ", 1)[0]
    assert all(word in backup for word in ("pg_dump", "pg_restore", "DJANGO_SECRET_KEY"))
    assert "image-cache" in backup and "CROWDVL_MEDIA_ROOT" in backup
    assert all(f"manage.py {c}" in upgrade for c in ("migrate", "collectstatic", "check"))
    commands = set(re.findall(r"manage\.py (\w+)", guide))
    assert {"migrate", "collectstatic", "jobs", "installation_regenerate"} <= commands
    assert commands - set(get_commands()) == set()
    targets = set(re.findall(r"(?:^|`)make ([\w-]+)", guide, re.M))
    defined = set(re.findall(r"^([\w-]+):", (root / "Makefile").read_text(), re.M))
    assert {"serve-prod", "worker"} <= targets and targets - defined == set()
