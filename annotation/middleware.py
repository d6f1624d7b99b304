"""Requests refused before any view runs."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote_to_bytes

from django.core.handlers.wsgi import get_bytes_from_wsgi
from django.http import Http404, HttpRequest, HttpResponse


def _clean(raw: bytes) -> bool:
    """No NUL (PostgreSQL refuses it in text: a lookup would be a 500) and valid UTF-8."""
    if b"\x00" in raw:
        return False
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class BadBytesMiddleware:
    """A path or query string with a NUL byte or invalid UTF-8 is a 404 for every URL (a JSON
    one under /api/, by the 404 handler), so no view has to guard each value it looks up."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # Django already turns invalid UTF-8 in the path into %XX text; NUL stays a NUL.
        if "\x00" not in request.path_info and _clean(_query_bytes(request)):
            return self.get_response(request)
        raise Http404("invalid bytes in the URL")  # config/urls.py's handler: JSON under /api/


def _query_bytes(request: HttpRequest) -> bytes:
    try:
        raw = get_bytes_from_wsgi(request.META, "QUERY_STRING", "")
    except UnicodeEncodeError:  # ASGI gives it decoded already
        raw = request.META.get("QUERY_STRING", "").encode()
    return unquote_to_bytes(raw)
