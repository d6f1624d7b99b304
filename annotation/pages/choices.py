"""A select offering some choices disabled, each with why beside it (a model whose optional
extra this installation lacks): shown, so a researcher knows it exists and what it needs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms


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
