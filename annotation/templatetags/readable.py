"""`definitions`: a stored JSON value (a job's result, an embedding set's preprocessing) as
people read it on a console page: a mapping as a definition list (nested ones inside), a list
of words joined, yes/no for booleans; never Python's or JSON's syntax. Every text is escaped
and the server's paths are hidden."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from annotation.paths import paths_hidden

register = template.Library()

LISTED = 20  # a longer list is counted, its first entries shown


def _value(value: Any) -> SafeString:
    if isinstance(value, dict):
        return definitions(value)
    if isinstance(value, list | tuple):
        if len(value) > LISTED:
            first = ", ".join(_word(v) for v in value[:5] if not isinstance(v, dict | list))
            return format_html(
                "{} values{}", len(value), f" (the first: {first}, …)" if first else ""
            )
        if any(isinstance(v, dict | list | tuple) for v in value):
            return format_html(
                "<ol>{}</ol>", format_html_join("", "<li>{}</li>", ((_value(v),) for v in value))
            )
        return format_html("{}", ", ".join(_word(v) for v in value) or "none")
    return format_html("{}", _word(value))


def _word(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None or value == "":
        return "none"
    return paths_hidden(str(value))


@register.filter
def definitions(value: Any) -> SafeString:
    """A mapping as `<dl class="definitions">`, its keys with underscores read as spaces."""
    if not isinstance(value, dict):
        return _value(value)
    if not value:
        return mark_safe("none")  # noqa: S308 - a constant
    rows = ((str(k).replace("_", " "), _value(v)) for k, v in value.items())
    return format_html(
        '<dl class="definitions">{}</dl>', format_html_join("", "<dt>{}</dt><dd>{}</dd>", rows)
    )
