"""Choices on console forms: a select offering some choices disabled, each with why beside it
(a model whose optional extra this installation lacks), and a form's project field limited to
the user's projects."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms
from django.db.models import QuerySet


class PartlyDisabledSelect(forms.Select):
    def __init__(self, *args: Any, disabled: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.disabled = dict(disabled)

    def create_option(
        self, name: str, value: Any, label: Any, *args: Any, **kwargs: Any
    ) -> dict[str, Any]:
        option = super().create_option(name, value, label, *args, **kwargs)
        why = self.disabled.get(str(value))
        if why is not None:
            option["attrs"]["disabled"] = True
            option["label"] = f"{label}: {why}"
        return option


def project_choice(
    form: forms.Form, *, projects: QuerySet[Any], required: bool
) -> forms.ModelChoiceField:
    """A form's `project` field limited to `projects` (those the user may act in), in name
    order: staff may leave it blank (the Default project), others pick one of theirs, and a
    member of one project has it chosen already."""
    field = form.fields["project"]
    assert isinstance(field, forms.ModelChoiceField)
    field.queryset = projects.order_by("name")
    field.required = required
    only = list(field.queryset[:2])
    if required and len(only) == 1:
        field.initial = only[0].pk  # a member of one project need not pick it
    return field
