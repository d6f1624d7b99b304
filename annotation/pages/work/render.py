"""Rendering a worker's task page: the HIT's page rendered once (`shell.py`: the same for every
worker of the HIT), filled in for this view with its varying parts and this assignment's
image URLs (selectors/work/images.py)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse

from annotation.pages.work.shell import shell_fill, task_shell


def task_render(
    request: HttpRequest,
    *,
    hit_id: int,
    key: str,
    instructions: str = "",
    context: dict[str, Any] | None = None,
    status: int = 200,
) -> HttpResponse:
    """The task page of HIT `hit_id` with the run's `instructions` for its stage, whose images
    load through the page key `key`. `context` is what differs per view (an error, hidden
    fields, a finishing link): only the template's `{% varies %}` parts see it."""
    shell = task_shell(hit_id=hit_id, instructions=instructions)
    html = shell_fill(shell, request=request, key=key, context=context or {})
    return HttpResponse(html, status=status)
