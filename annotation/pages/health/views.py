"""`/health/`: is the service able to work? Database, message broker and media storage, each
"ok" or "error" (no details: the endpoint is public, for load balancers and monitors)."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

log = logging.getLogger(__name__)


def _database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _broker() -> None:
    from config import celery_app

    with celery_app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=2)


def _storage() -> None:
    root = Path(settings.MEDIA_ROOT)
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=root, prefix=".health-"):
        pass


CHECKS = {"database": _database, "broker": _broker, "storage": _storage}


@require_GET
def health(request: HttpRequest) -> JsonResponse:
    results = {}
    for name, check in CHECKS.items():
        try:
            check()
            results[name] = "ok"
        except Exception:  # any failure is the answer; its detail goes to the log
            log.exception("health check %s failed", name)
            results[name] = "error"
    healthy = all(v == "ok" for v in results.values())
    return JsonResponse(
        {"status": "ok" if healthy else "error", **results}, status=200 if healthy else 503
    )
