"""The new-batch form: stage, provider, reward, sizes, times, qualifications and the stages'
own options (`TaskType.batch_options`), offered per the providers' declared capabilities."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, cast

from django import forms

from annotation.crowd import provider_for, web_provider_names
from annotation.flow_registry import flow_for_kind, stage_label
from annotation.models import Run
from annotation.tasktypes import task_type_for
from annotation.tasktypes.base import BatchOption


def providers() -> list[tuple[str, str]]:
    """Real crowds; the simulated one only where it cannot be mistaken for them (DEBUG)."""
    return [(name, provider_for(name).label or name) for name in web_provider_names()]


class BatchForm(forms.Form):
    stage = forms.ChoiceField()
    provider = forms.ChoiceField()
    reward = forms.DecimalField(
        min_value=Decimal("0.01"), decimal_places=2, required=False, help_text="$ per HIT"
    )
    items_per_hit = forms.IntegerField(min_value=1, required=False)
    assignments_per_hit = forms.IntegerField(min_value=1, required=False)
    limit = forms.IntegerField(
        min_value=1,
        required=False,
        help_text="at most this many waiting items (e.g. a stage's first, calibration batch)",
    )
    lifetime_hours = forms.IntegerField(min_value=1, initial=7 * 24)
    assignment_minutes = forms.IntegerField(min_value=1, initial=60)
    min_approval_percent = forms.IntegerField(min_value=0, max_value=100, required=False)
    min_approved_hits = forms.IntegerField(min_value=0, required=False)
    locales = forms.CharField(required=False, help_text="platforms with locales: e.g. US,GB,CA")
    allow_low_pay = forms.BooleanField(required=False)

    def __init__(self, *args: Any, run: Run, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        flow = flow_for_kind(run.kind)
        tasks = list(flow.task_types) if flow else []
        cast(forms.ChoiceField, self.fields["stage"]).choices = [
            (t.stage, stage_label(t.stage)) for t in tasks
        ]
        cast(forms.ChoiceField, self.fields["provider"]).choices = providers()
        # The stages' own options (an ECCV round's direction, ...); one field per option,
        # named after the stages that take it when not all do.
        owners: dict[str, tuple[BatchOption, list[str]]] = {}
        for task in tasks:
            for option in task.batch_options:
                owners.setdefault(option.name, (option, []))[1].append(stage_label(task.stage))
        for name, (option, labels) in owners.items():
            only = f" ({', '.join(labels)} only)" if len(labels) < len(tasks) else ""
            self.fields[name] = _option_field(option, only)

    def task_options(self) -> dict[str, Any]:
        """The options the chosen stage takes, as `create_batch` stores them (an empty
        choice: not set)."""
        data = self.cleaned_data
        return {
            option.name: data[option.name]
            for option in task_type_for(data["stage"]).batch_options
            if option.name in data and data[option.name] != ""
        }

    def qualifications(self) -> dict[str, Any]:
        data = self.cleaned_data
        rules: dict[str, Any] = {}
        for key in ("min_approval_percent", "min_approved_hits"):
            if data[key] is not None:
                rules[key] = data[key]
        if data["locales"].strip():
            rules["locales"] = [c.strip().upper() for c in data["locales"].split(",") if c.strip()]
        return rules


def _option_field(option: BatchOption, only: str) -> forms.Field:
    if option.choices:
        return forms.ChoiceField(
            label=option.label,
            choices=option.choices,
            initial=option.default,
            required=False,
            help_text=option.help + only,
        )
    return forms.BooleanField(
        label=option.label, initial=option.default, required=False, help_text=option.help + only
    )
