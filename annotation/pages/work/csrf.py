"""A form's CSRF token as Django's `get_token` makes it (the cookie's secret under a fresh random
mask, and the cookie sent again), with the mask's 32 characters drawn from one os.urandom call:
Django draws each by `secrets.choice`, ~40 µs of the ~0.6 ms a worker's task page costs."""

from __future__ import annotations

import os
import time
from http.cookies import Morsel, SimpleCookie
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.middleware.csrf import CSRF_ALLOWED_CHARS, CSRF_SECRET_LENGTH, get_token
from django.utils.http import http_date

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


# The CSRF cookie as CsrfViewMiddleware sets it, built by Django's own `set_cookie` once per
# second (its expiry date counts in whole seconds) and settings, then copied for each response
# with the request's secret: ~3 µs instead of ~15.
_cookie: tuple[tuple[Any, ...], Morsel[str]] | None = None


def csrf_cookie_set(request: HttpRequest, response: HttpResponseBase) -> bool:
    """Do what `CsrfViewMiddleware.process_response` does to a response that has no cookie and
    no Vary header yet: the cookie sent again where the request needs it (as `csrf_token`
    leaves it). False where that takes the middleware's own way (the token kept in the
    session, a cookie age that is not whole seconds, a response that already varies)."""
    global _cookie
    if not request.META.get("CSRF_COOKIE_NEEDS_UPDATE"):
        return True
    age = settings.CSRF_COOKIE_AGE
    if settings.CSRF_USE_SESSIONS or type(age) is not int or response.has_header("Vary"):
        return False
    name = settings.CSRF_COOKIE_NAME
    now = int(time.time())
    key = (
        now,
        name,
        age,
        settings.CSRF_COOKIE_DOMAIN,
        settings.CSRF_COOKIE_PATH,
        settings.CSRF_COOKIE_SECURE,
        settings.CSRF_COOKIE_HTTPONLY,
        settings.CSRF_COOKIE_SAMESITE,
    )
    if _cookie is None or _cookie[0] != key:
        model = HttpResponse()
        model.set_cookie(
            name, "", max_age=age, domain=key[3], path=key[4], secure=key[5],
            httponly=key[6], samesite=key[7],
        )  # fmt: skip
        # Its expiry as set_cookie gives it at any time within this second.
        model.cookies[name]["expires"] = http_date(now + age)
        _cookie = (key, model.cookies[name])
    morsel = _cookie[1].copy()
    secret = request.META["CSRF_COOKIE"]
    morsel.set(name, *_ENCODE.value_encode(secret))
    response.cookies[name] = morsel
    response.headers["Vary"] = "Cookie"
    request.META["CSRF_COOKIE_NEEDS_UPDATE"] = False
    return True


_ENCODE = SimpleCookie()
