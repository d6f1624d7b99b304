"""The project package. The Celery app (config/celery.py) is not loaded here: importing Celery
cost every `manage.py` command and web process its start-up time (issue 46). `celery -A config`
finds `config.celery.app` by itself, every tasks module imports the app it registers on, and
`config.celery_app` still names it, loaded on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from celery import Celery

    celery_app: Celery

__all__ = ["celery_app"]


def __getattr__(name: str) -> Any:
    if name == "celery_app":
        from config.celery import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
