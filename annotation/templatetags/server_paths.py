"""`{{ text|paths_hidden }}`: a stored message with the server's absolute paths hidden
(annotation/paths.py), for pages that show job messages and errors."""

from __future__ import annotations

from typing import Any

from django import template

from annotation.paths import paths_hidden as _paths_hidden

register = template.Library()


@register.filter
def paths_hidden(value: Any) -> Any:
    return _paths_hidden(value)
