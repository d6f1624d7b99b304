"""Lists in the API: limit/offset pages, filters read by a serializer, and one URL served by
one API class per HTTP method (GET lists, POST creates), so each operation keeps its class."""

from __future__ import annotations

from typing import Any, cast

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.api.errors import ServiceAPIView


class Page(LimitOffsetPagination):
    default_limit = 50
    max_limit = 500


# The page's query parameters, for the schema (the filters come from each list's serializer).
PAGE_PARAMETERS = [
    OpenApiParameter(
        "limit",
        OpenApiTypes.INT,
        description=f"items per page (default {Page.default_limit}, at most {Page.max_limit})",
    ),
    OpenApiParameter("offset", OpenApiTypes.INT, description="items to skip"),
]


def page_of(item: type[serializers.Serializer]) -> type[serializers.Serializer]:
    """The schema of a page of `item`s: its count, links to the next and previous pages, and
    the items. Named after the operation (`RunListApi.OutputSerializer` -> `RunListPage`)."""
    owner = item.__qualname__.split(".")[0].removesuffix("Api")
    fields = {
        "count": serializers.IntegerField(),
        "next": serializers.URLField(allow_null=True),
        "previous": serializers.URLField(allow_null=True),
        "results": item(many=True),
    }
    page = type(f"{owner}Page", (serializers.Serializer,), fields)
    page.__qualname__ = page.__name__
    return page


def filters(serializer: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    """The list's filters from the query string; a bad one is a 400 naming it. Paging
    parameters are read by `paginated`."""
    params = {k: v for k, v in request.query_params.items() if k not in ("limit", "offset")}
    data = serializer(data=params)
    data.is_valid(raise_exception=True)
    return dict(data.validated_data)  # the selectors ignore empty values


def paginated(
    output: type[serializers.Serializer], items: QuerySet | list, request: Request, view: APIView
) -> Response:
    pager = Page()
    page = pager.paginate_queryset(items, request, view=view)
    data = output(page, many=True, context={"request": request}).data
    return pager.get_paginated_response(data)


def by_method(**views: type[ServiceAPIView]) -> Any:
    """The view for one URL whose methods are operations of their own: `by_method(get=
    RunListApi, post=RunCreateApi)`. Each class keeps its required action; its methods must
    name their serializers by their own class (`RunCreateApi.InputSerializer`), not `self`."""
    actions = {method.upper(): view.required_action for method, view in views.items()}
    if "GET" in actions:
        actions["HEAD"] = actions["OPTIONS"] = actions["GET"]
    name = "".join(view.__name__.removesuffix("Api") for view in views.values()) + "Api"
    combined = type(
        name,
        tuple(views.values()),
        {"required_actions": actions, "__doc__": None, "__module__": __name__},
    )
    return cast(type[APIView], combined).as_view()
