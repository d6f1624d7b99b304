"""Rendering a worker's task page: the HIT's view (the same for every worker of the HIT)
with its image URLs made this assignment's (selectors/images.py)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from annotation.selectors.images import with_page_key


def task_render(
    request: HttpRequest,
    *,
    view: dict[str, Any],
    key: str,
    context: dict[str, Any] | None = None,
    status: int = 200,
) -> HttpResponse:
    """The task page of `view` whose images load through the page key `key`."""
    response = render(request, view["template"], {**view, **(context or {})}, status=status)
    response.content = with_page_key(response.content, key)
    return response
