"""The OpenAPI schema's component names: each API class nests its own `InputSerializer` and
`OutputSerializer` (one class per operation), so the names are prefixed with the operation's
(`BatchCreateApi.OutputSerializer` -> `BatchCreateOutput`) instead of colliding."""

from __future__ import annotations

from typing import Any, cast

from drf_spectacular.openapi import AutoSchema


class ServiceSchema(AutoSchema):
    def get_serializer_name(self, serializer: Any, direction: str) -> str:
        cls = serializer if isinstance(serializer, type) else type(serializer)
        parts = cls.__qualname__.split(".")
        if len(parts) > 1:
            return parts[-2].removesuffix("Api") + parts[-1]
        return str(super().get_serializer_name(serializer, cast(Any, direction)))
