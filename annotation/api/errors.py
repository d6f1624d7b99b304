from __future__ import annotations

import sys
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.views import defaults
from rest_framework import exceptions as drf_exceptions
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView, exception_handler

from annotation.errors import NotAssignmentHolder, PoolConflict, Refused, ServiceError
from annotation.models import Project, Run
from annotation.paths import paths_hidden
from annotation.permissions import Action, require
from pipeline.errors import InputError


class ErrorBody(serializers.Serializer):
    """Every refusal: the message, and for bad input the file, record and field it names."""

    error = serializers.CharField()
    file = serializers.CharField(required=False, allow_null=True)
    # A line number, an id or a key, as the file has it.
    record = serializers.JSONField(required=False, allow_null=True)
    field = serializers.CharField(required=False, allow_null=True)
    fields = serializers.DictField(  # type: ignore[assignment]  # a serializer field named "fields": DRF's metaclass moves it to _declared_fields
        required=False, help_text="bad input: every field's messages (the first is `field`)"
    )
    detail = serializers.CharField(required=False, help_text="DRF's message, as `error`")
    reasons = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="several refusals found at once (publishing): each with what to do",
    )


class PayloadTooLarge(drf_exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "request body too large"
    default_code = "too_large"


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, plus Django's refusals of a request body (too large, too many fields or
    files), which it would leave to Django's HTML 400 page."""
    if isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge(
            f"request body over {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes; "
            "send large files as a multipart upload"
        )
    elif isinstance(exc, SuspiciousOperation):
        exc = drf_exceptions.ParseError(str(exc) or "bad request body")
    response = exception_handler(exc, context)
    data = response.data if response is not None else None
    if isinstance(data, dict) and "detail" in data and "error" not in data:
        response.data = {"error": str(data["detail"]), **data}  # type: ignore[union-attr]
    return response


# The refusals every operation may answer (see ServiceAPIView.handle_exception).
ERRORS = {400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody}


class ServiceAPIView(APIView):
    """Turns service errors into clear JSON responses. `required_action` is what the user
    must be allowed in some project to call the view at all (ProjectPermission; staff only
    unless a view says otherwise); the view then checks its object's run or project."""

    required_action: str = Action.ADMIN
    # Set by `paging.by_method` when one URL serves several operations: the action per method.
    required_actions: dict[str, str] | None = None

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        if self.required_actions is not None:
            self.required_action = self.required_actions.get(request.method or "", Action.ADMIN)
        super().initial(request, *args, **kwargs)

    def require(
        self,
        request: Request,
        *,
        run: Run | None = None,
        project: Project | None = None,
        action: str | None = None,
    ) -> None:
        require(request.user, action or self.required_action, run=run, project=project)

    def handle_exception(self, exc: Exception) -> Response:
        # A refusal may quote a stored file: the server's absolute paths are hidden.
        if isinstance(exc, InputError):
            body: dict[str, Any] = {
                "error": paths_hidden(str(exc)),
                "file": paths_hidden(exc.file),
                "record": exc.record,
                "field": exc.field,
            }
            return Response(body, status=status.HTTP_400_BAD_REQUEST)
        if isinstance(exc, NotAssignmentHolder | PoolConflict):
            return Response({"error": str(exc)}, status=status.HTTP_403_FORBIDDEN)
        if isinstance(exc, Refused):
            reasons = [paths_hidden(r) for r in exc.reasons]
            body = {"error": "; ".join(reasons), "reasons": reasons}
            return Response(body, status=status.HTTP_409_CONFLICT)
        if isinstance(exc, ServiceError):
            return Response({"error": paths_hidden(str(exc))}, status=status.HTTP_409_CONFLICT)
        return _uniform(exc, super().handle_exception(exc))


def _uniform(exc: Exception, response: Response) -> Response:
    """DRF's own refusals in the same body: `error` always, and for bad input the first
    field named as `field` with all of them under `fields`."""
    data = response.data
    if isinstance(exc, drf_exceptions.ValidationError):
        if isinstance(data, dict) and data:
            field, messages = next(iter(data.items()))
            first = messages[0] if isinstance(messages, list) and messages else messages
            named = None if field == "non_field_errors" else str(field)
            prefix = f"{named}: " if named else ""
            response.data = {"error": f"{prefix}{first}", "field": named, "fields": data}
        else:
            messages = data if isinstance(data, list) else [data]
            response.data = {"error": str(messages[0]) if messages else "invalid input"}
    elif isinstance(exc, Http404 | drf_exceptions.NotFound):
        # One body for every missing or hidden object: the message must not tell an id of
        # another project (refused by `require`) from one that does not exist.
        response.data = {"error": "not found", "detail": "not found"}
    elif isinstance(data, dict) and "detail" in data and "error" not in data:
        response.data = {"error": str(data["detail"]), **data}
    return response


# Django's own error pages for requests no DRF view answers (an unknown /api/ URL, an error
# outside a view): under /api/ the same JSON body as the API's refusals, elsewhere the HTML
# pages (frontend/templates/404.html, 500.html). config/urls.py names these as its handlers.

API_PREFIX = "/api/"


def _api(request: HttpRequest) -> bool:
    return request.path_info.startswith(API_PREFIX)


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _api(request):
        return JsonResponse({"error": "not found", "detail": "not found"}, status=404)
    return defaults.page_not_found(request, exception)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _api(request):
        return JsonResponse({"error": "bad request", "detail": "bad request"}, status=400)
    return defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _api(request):
        message = str(exception) or "permission denied"
        return JsonResponse({"error": message, "detail": message}, status=403)
    return defaults.permission_denied(request, exception)


RETRY_AFTER_SECONDS = 5


def _database_unavailable() -> bool:
    """Whether the error being handled is the database going away or refusing for a moment
    (a restart, a failover, a full connection slot list, SQLite's lock): worth retrying."""
    exc = sys.exc_info()[1]
    return isinstance(exc, OperationalError | InterfaceError)


def database_unavailable(request: HttpRequest) -> HttpResponse:
    """503 with Retry-After: JSON under /api/; elsewhere a page that retries by itself (a GET
    reloads, a posted form is sent again with the same fields: nothing the worker typed is
    lost, and a form already stored is refused as a duplicate, never stored twice)."""
    if _api(request):
        message = "the database is unavailable for a moment; try again"
        response: HttpResponse = JsonResponse({"error": message, "detail": message}, status=503)
    else:
        post = request.method == "POST"
        fields = [(k, v) for k, values in request.POST.lists() for v in values] if post else []
        # A password is never written back into a page: such a form is sent again by hand.
        replay = post and not any("password" in name for name, _ in fields)
        context = {
            "retry": RETRY_AFTER_SECONDS,
            "post": post,
            "replay": replay,
            "fields": fields if replay else [],
        }
        # No context processors: they may read the session or the user, i.e. the database.
        response = HttpResponse(render_to_string("503.html", context), status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response


def server_error(request: HttpRequest) -> HttpResponse:
    if _database_unavailable():
        return database_unavailable(request)
    if _api(request):
        # Nothing of the exception: its text may name files, queries or settings.
        body = {"error": "server error", "detail": "server error"}
        return JsonResponse(body, status=500)
    return defaults.server_error(request)
