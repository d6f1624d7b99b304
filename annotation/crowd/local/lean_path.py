"""The worker's task page GET answered ahead of the generic middleware, through public Django
APIs only: the middleware classes' own hooks, `get_token`, the session engine's own load.

A worker re-opening their open assignment's page is the hottest request of the app. This
middleware, first in MIDDLEWARE, answers it with the same checks and the same response as the
full stack, running only what that request needs of the middleware after it, each by its own
hooks, in the stack's order: SecurityMiddleware (HTTPS redirect, its headers), CommonMiddleware
(ALLOWED_HOSTS, refused agents, the www redirect, Content-Length), SessionMiddleware (the
session; Vary: Cookie), CsrfViewMiddleware (the token, the cookie sent again),
XFrameOptionsMiddleware. What it leaves out cannot change such a request's answer: BadBytes (no
query string, a path of digits), WhiteNoise (not a static path), Authentication (nobody signed
in: a session with a user goes the full way), Messages (no messages cookie, or an empty one).
The view's checks are the view's own (`views.work_assignment_plain`); anything else goes the
full way, as does every other request. With another MIDDLEWARE list or message storage the
path is off.

Gain (issue 49): in one process the page costs 0.73x the full stack's CPU per request with it
(1,444 against 1,955 µs, 2,219 against 2,914 Python calls; `python benchmarks/task_page_early.py`,
benchmarks/results/task_page_early.txt).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.contrib.messages.storage.cookie import CookieStorage
from django.contrib.sessions.middleware import SessionMiddleware
from django.core.exceptions import DisallowedHost, PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.csrf import CsrfViewMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import NoReverseMatch, get_script_prefix, resolve, reverse

from annotation.crowd.local.views import work_assignment_plain

# The middleware after this one whose effect on the task page GET is mirrored here.
MIRRORED = (
    "django.middleware.security.SecurityMiddleware",
    "annotation.middleware.BadBytesMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
)
# Message storages whose messages all come with the messages cookie.
COOKIE_MESSAGES = (
    "django.contrib.messages.storage.fallback.FallbackStorage",
    "django.contrib.messages.storage.cookie.CookieStorage",
)
_ASSIGNMENT = 987654321  # a sample id, to find the path's pattern by reversing it


def lean_path_on() -> bool:
    """Whether the settings are those this path mirrors."""
    return (
        tuple(settings.MIDDLEWARE) == (f"{__name__}.TaskPageMiddleware", *MIRRORED)
        and settings.MESSAGE_STORAGE in COOKIE_MESSAGES
    )


class TaskPageMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.on = lean_path_on()
        self.security = SecurityMiddleware(get_response)
        self.common = CommonMiddleware(get_response)
        self.session = SessionMiddleware(get_response)
        self.csrf = CsrfViewMiddleware(get_response)
        self.xframe = XFrameOptionsMiddleware(get_response)
        self._pattern: re.Pattern[str] | None = None

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.lean(request)
        if response is not None:
            return response
        return self.get_response(request)

    def lean(self, request: HttpRequest) -> HttpResponseBase | None:
        """The task page by the lean path; None (the request left as it came) where the full
        way answers."""
        if self.on and request.method == "GET" and not request.META.get("QUERY_STRING"):
            match = self.pattern().fullmatch(request.path_info)
            # An empty messages cookie (one deleted by a client that keeps it) holds none.
            if match and not request.COOKIES.get(CookieStorage.cookie_name):
                try:
                    response = self.answer(request, int(match[1]))
                except Exception:  # the full way answers it (and logs it) as ever
                    response = None
                if response is not None:
                    return response
                if hasattr(request, "session"):  # the full way's SessionMiddleware sets it
                    del request.session
        return None

    def pattern(self) -> re.Pattern[str]:
        """The task page's path (a path_info) with the assignment id as its group; one that
        matches nothing when the URLs have no such page."""
        if self._pattern is None:
            try:
                url = reverse("work-assignment", kwargs={"assignment_id": _ASSIGNMENT})
                path = "/" + url.removeprefix(get_script_prefix())
                if resolve(path).url_name != "work-assignment":
                    raise NoReverseMatch
                before, after = path.split(str(_ASSIGNMENT))
                # As the int converter reads it, within a bigint (longer: the full way).
                self._pattern = re.compile(f"{re.escape(before)}([0-9]{{1,18}}){re.escape(after)}")
            except NoReverseMatch:
                self._pattern = re.compile(r"(?!)")
        return self._pattern

    def answer(self, request: HttpRequest, assignment_id: int) -> HttpResponseBase | None:
        """The page through the mirrored hooks, or None where the full way must answer."""
        if self.security.process_request(request) is not None:  # an HTTPS redirect
            return None
        try:
            if self.common.process_request(request) is not None:  # a www redirect
                return None
        except (DisallowedHost, PermissionDenied):
            return None
        self.session.process_request(request)
        if SESSION_KEY in request.session:  # someone signed in: their bar is on the page
            return None
        self.csrf.process_request(request)
        page = work_assignment_plain(request, assignment_id)
        if page is None:
            return None
        # The stack's response hooks, innermost first (Messages': nothing stored, no cookie).
        response: Any = page  # django-stubs type the hooks' responses each differently
        response = self.xframe.process_response(request, response)
        response = self.csrf.process_response(request, response)
        response = self.common.process_response(request, response)
        response = self.session.process_response(request, response)
        return self.security.process_response(request, response)
