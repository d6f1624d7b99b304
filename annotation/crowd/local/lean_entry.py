"""The task page's lean path at the WSGI entry (issue 32), ahead of Django's handler.

A worker's task page GET costs ~0.6 ms of the app's CPU; Django's handler spends ~0.13 ms of it
around the page: the request_started and request_finished signals (their receivers look up
every database connection and cache through thread-local handlers, each more than once), the
URL conf set and reset, the exception wrapper. Here the request the lean path answers
(`lean_path.TaskPageMiddleware.lean`) takes the same steps without that machinery:

- at the start, what Django's own request_started receivers do: each open database
  connection's query log cleared, then each closed if unusable or past its age (this also
  makes its next statement a health check: `selectors.task_page._row` stands for it);
- the URL conf and script prefix set as the handler sets them;
- at the end (when the server closes the response), what the request_finished receivers do:
  the connections checked again, the caches closed (skipped where every backend's close does
  nothing), the URL conf reset.

Only while the two signals have Django's receivers and no others: with any other receiver
connected (a project's, a test's), the signals are sent as ever (connected before the
entry is made: the handler takes every request). Anything the lean path
leaves (another path, a POST, a query string, a page it does not answer) goes to Django's
handler untouched, or, once the request is made, to its `get_response` (the middleware then
skips the lean path: it was tried), so the response, its headers and its logging are the
handler's own. With another MIDDLEWARE list the entry is the handler itself."""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from django.conf import settings
from django.core import signals
from django.core.cache import caches, close_caches
from django.core.cache.backends.base import BaseCache
from django.core.handlers.base import reset_urlconf
from django.core.handlers.wsgi import WSGIHandler, get_script_name
from django.db import close_old_connections, connections, reset_queries
from django.dispatch import Signal
from django.http.response import HttpResponseBase
from django.urls import set_script_prefix, set_urlconf
from django.utils.module_loading import import_string

from annotation.crowd.local.lean_path import TRIED, TaskPageMiddleware

# Django's own receivers of the two signals (in any order: each does its own part; Django's
# test client disconnects and connects close_old_connections again around its requests).
STARTED = frozenset((reset_queries, close_old_connections))
FINISHED = frozenset((close_old_connections, close_caches, reset_urlconf))


def task_page_entry(handler: WSGIHandler) -> WSGIApplication:
    """`handler` with the task page answered ahead of it, where the lean path is on."""
    chain = getattr(handler, "_middleware_chain", None)
    middleware = getattr(chain, "__wrapped__", None)  # convert_exception_to_response's
    if not isinstance(middleware, TaskPageMiddleware) or not middleware.on:
        return handler
    # Each signal's receivers where Django's are its only ones (their lookup keys, compared on
    # every request); with others connected first, the handler takes every request.
    started = _only(signals.request_started, STARTED)
    finished = _only(signals.request_finished, FINISHED)
    if started is None or finished is None:
        return handler
    return TaskPageEntry(handler, middleware, started, finished)


def _receivers(signal: Signal) -> list[Any]:
    """The functions connected to `signal` (a dead weak reference gives None)."""
    found = []
    for entry in signal.receivers:
        receiver = entry[1]
        if isinstance(receiver, weakref.ReferenceType):
            receiver = receiver()
        found.append(receiver)
    return found


def _only(signal: Signal, receivers: frozenset[Any]) -> frozenset[Any] | None:
    """The lookup keys of `signal`'s receivers where they are `receivers`, each once."""
    connected = _receivers(signal)
    if len(connected) != len(receivers) or frozenset(connected) != receivers:
        return None
    return _keys(signal)


def _keys(signal: Signal) -> frozenset[Any]:
    return frozenset(entry[0] for entry in signal.receivers)


class TaskPageEntry:
    """A WSGI application: the lean path's page without the handler's machinery around it,
    everything else Django's handler."""

    def __init__(
        self,
        handler: WSGIHandler,
        middleware: TaskPageMiddleware,
        started: frozenset[Any],
        finished: frozenset[Any],
    ) -> None:
        self.handler = handler
        self.middleware = middleware
        self.started = started  # the lookup keys of Django's own receivers of each signal
        self.finished = finished
        self._caches: tuple[Any, bool] = (None, False)

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        # A cheap look first: only a GET with no query string can be the lean path's.
        if (
            environ.get("REQUEST_METHOD") != "GET"
            or environ.get("QUERY_STRING")
            or _keys(signals.request_started) != self.started
            or not self.middleware.pattern().fullmatch(environ.get("PATH_INFO", ""))
        ):
            return self.handler(environ, start_response)
        set_script_prefix(get_script_name(environ))
        conns = connections.all(initialized_only=True)
        for conn in conns:  # reset_queries
            conn.queries_log.clear()
        for conn in conns:  # close_old_connections
            conn.close_if_unusable_or_obsolete()
        request = self.handler.request_class(environ)
        set_urlconf(settings.ROOT_URLCONF)
        try:
            response = self.middleware.lean(request)
        except Exception:  # the full way answers it (and logs it), as the middleware's stack
            response = None
        if response is None:  # the full way, as the handler takes it from here
            setattr(request, TRIED, True)
            response = self.handler.get_response(request)
            body: Iterable[bytes] = response
            stream = getattr(response, "file_to_stream", None)
            if stream is not None and environ.get("wsgi.file_wrapper"):  # as the handler's
                stream.close = response.close
                body = environ["wsgi.file_wrapper"](stream, response.block_size)  # type: ignore[attr-defined]
            return self._send(response, start_response, body)
        response._resource_closers.append(request.close)  # type: ignore[attr-defined]
        return self._send(response, start_response, _Sent(response, self._finish))

    def _send(
        self,
        response: HttpResponseBase,
        start_response: StartResponse,
        body: Iterable[bytes],
    ) -> Iterable[bytes]:
        """The status and headers sent as WSGIHandler sends them; `body` returned."""
        response._handler_class = type(self.handler)  # type: ignore[attr-defined]
        status = f"{response.status_code} {response.reason_phrase}"
        headers = [
            *response.items(),
            *(("Set-Cookie", c.output(header="")) for c in response.cookies.values()),
        ]
        start_response(status, headers)
        return body

    def _finish(self) -> None:
        """What request_finished's receivers do, or the signal where it has others now."""
        if _keys(signals.request_finished) != self.finished:
            signals.request_finished.send(sender=type(self.handler))
            return
        for conn in connections.all(initialized_only=True):  # close_old_connections
            conn.close_if_unusable_or_obsolete()
        if not self._caches_close_nothing():  # close_caches
            caches.close_all()
        set_urlconf(None)  # reset_urlconf

    def _caches_close_nothing(self) -> bool:
        """Whether no configured cache backend has a close of its own (BaseCache's does
        nothing), for these settings (a new dict when CACHES change)."""
        configured = caches.settings
        if self._caches[0] is not configured:
            nothing = all(
                import_string(cache["BACKEND"]).close is BaseCache.close
                for cache in configured.values()
            )
            self._caches = (configured, nothing)
        return self._caches[1]


class _Sent:
    """The lean page's body as the server sends it; closing it ends the request as the
    response's own close does, with request_finished's work done by `finish`."""

    def __init__(self, response: HttpResponseBase, finish: Callable[[], None]) -> None:
        self.response = response
        self.finish = finish

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.response)

    def close(self) -> None:
        response: Any = self.response  # django-stubs omit the closers
        for closer in response._resource_closers:
            with contextlib.suppress(Exception):  # as the response's own close
                closer()
        response._resource_closers.clear()
        response.closed = True
        self.finish()
