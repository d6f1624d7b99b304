"""A form's CSRF token as Django's `get_token` makes it (the cookie's secret under a fresh random
mask, and the cookie sent again), with the mask's 32 characters drawn from one os.urandom call:
Django draws each by `secrets.choice`, ~40 µs of the ~0.6 ms a worker's task page costs."""

from __future__ import annotations

import os

from django.http import HttpRequest
from django.middleware.csrf import CSRF_ALLOWED_CHARS, CSRF_SECRET_LENGTH, get_token

_BASE = len(CSRF_ALLOWED_CHARS)
# Bytes below this fall evenly on the characters (byte % 62); the rest are drawn again.
_EVEN = 256 - 256 % _BASE
_INDEX = {char: n for n, char in enumerate(CSRF_ALLOWED_CHARS)}


def _mask() -> list[int]:
    """CSRF_SECRET_LENGTH uniform draws from 0..61."""
    drawn: list[int] = []
    while len(drawn) < CSRF_SECRET_LENGTH:
        drawn += [b % _BASE for b in os.urandom(CSRF_SECRET_LENGTH + 8) if b < _EVEN]
    return drawn[:CSRF_SECRET_LENGTH]


def csrf_token(request: HttpRequest) -> str:
    """The masked token of the request's CSRF secret (CsrfViewMiddleware's process_request has
    read it from the cookie); Django's own `get_token` where there is none yet."""
    secret = request.META.get("CSRF_COOKIE")
    if (
        not isinstance(secret, str)
        or len(secret) != CSRF_SECRET_LENGTH
        or any(char not in _INDEX for char in secret)
    ):
        return get_token(request)
    request.META["CSRF_COOKIE_NEEDS_UPDATE"] = True  # as get_token: the cookie's expiry renewed
    mask = _mask()
    cipher = (
        CSRF_ALLOWED_CHARS[(_INDEX[c] + m) % _BASE] for c, m in zip(secret, mask, strict=True)
    )
    return "".join(CSRF_ALLOWED_CHARS[m] for m in mask) + "".join(cipher)
