"""The new-batch form: stage, provider, reward, sizes, times, qualifications and the stages'
own options (`TaskType.batch_options`), offered per the providers' declared capabilities."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, cast

from django import forms

from annotation.flow_registry import flow_for_kind, stage_label
from annotation.models import Run, default_qualifications
from annotation.money import currency_code, symbol
from annotation.providers import provider_for, web_provider_names
from annotation.providers.base import ASSIGNMENT_DURATION_RANGE, LIFETIME_RANGE
from annotation.selectors.money.pay import min_hourly_pay
from annotation.services.money.spend import ALLOW_LOW_PAY_LABEL
from annotation.tasktypes import task_type_for
from annotation.tasktypes.base import BatchOption, TaskType


def providers() -> list[tuple[str, str]]:
    """Real crowds; the simulated one only where it cannot be mistaken for them (DEBUG)."""
    return [(name, provider_for(name).label or name) for name in web_provider_names()]


def _per_stage(values: dict[str, Any]) -> str:
    """ "10" when every stage has it, else "Selection 10, Verification 2"."""
    if len(set(values.values())) == 1:
        return str(next(iter(values.values())))
    return ", ".join(f"{stage_label(stage)} {value}" for stage, value in values.items())


class BatchForm(forms.Form):
    """Every field says its unit and its default, pre-filled. The stage's sizes are pre-filled
    for the first stage (`batch_form.js` swaps them with the stage chosen); a size sent as
    pre-filled is not a choice (`stage_sizes`): the stage decides it, as for an empty field."""

    stage = forms.ChoiceField(
        label="Stage", help_text="the question the workers answer; its sizes follow it"
    )
    provider = forms.ChoiceField(
        label="Crowd", help_text="who does the work; the next page shows its fees and rules"
    )
    reward = forms.DecimalField(
        min_value=Decimal("0.01"),
        decimal_places=2,
        required=False,
        widget=forms.NumberInput(attrs={"step": "0.01", "placeholder": "the stage's"}),
    )
    items_per_hit = forms.IntegerField(min_value=1, required=False, label="Items per HIT (count)")
    assignments_per_hit = forms.IntegerField(
        min_value=1, required=False, label="Workers per HIT (count)"
    )
    limit = forms.IntegerField(
        min_value=1,
        required=False,
        label="At most this many items (count)",
        help_text="a first, calibration batch of a stage takes a few of its waiting items. "
        "Default: all the waiting items.",
        widget=forms.NumberInput(attrs={"placeholder": "all"}),
    )
    # The providers' ranges (`providers/base.py`) in the form's own units: refused here, by the
    # field, rather than by `batch_create` in seconds.
    lifetime_hours = forms.IntegerField(
        min_value=1,
        max_value=LIFETIME_RANGE[1] // 3600,
        initial=7 * 24,
        label="Offered for (hours)",
        help_text="how long its HITs are offered before the batch expires. Default: 168 (a week).",
    )
    assignment_minutes = forms.IntegerField(
        min_value=1,
        max_value=ASSIGNMENT_DURATION_RANGE[1] // 60,
        initial=60,
        label="Time to finish one HIT (minutes)",
        help_text="a claimed HIT not submitted in time goes back to the others. Default: 60.",
    )
    min_approval_percent = forms.IntegerField(
        min_value=0,
        max_value=100,
        required=False,
        label="Lowest approval rate (percent)",
    )
    min_approved_hits = forms.IntegerField(
        min_value=0, required=False, label="Fewest approved HITs (count)"
    )
    locales = forms.CharField(required=False, label="Locales (country codes)")
    allow_low_pay = forms.BooleanField(
        required=False,
        label=ALLOW_LOW_PAY_LABEL,
        help_text="publish even when the expected hourly pay is under the installation's "
        "minimum. Default: no.",
    )

    def __init__(self, *args: Any, run: Run, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        flow = flow_for_kind(run.kind)
        tasks = list(flow.task_types) if flow else []
        cast(forms.ChoiceField, self.fields["stage"]).choices = [
            (t.stage, stage_label(t.stage)) for t in tasks
        ]
        cast(forms.ChoiceField, self.fields["provider"]).choices = providers()
        self.stage_sizes = {
            t.stage: {
                "items_per_hit": t.default_items_per_hit,
                "assignments_per_hit": t.assignments_default(run=run, options={}),
            }
            for t in tasks
        }
        self._describe_stage_fields(tasks)
        # The stages' own options (an ECCV round's direction, ...); one field per option,
        # named after the stages that take it when not all do.
        owners: dict[str, tuple[BatchOption, list[str]]] = {}
        for task in tasks:
            for option in task.batch_options:
                owners.setdefault(option.name, (option, []))[1].append(stage_label(task.stage))
        for name, (option, labels) in owners.items():
            only = f" ({', '.join(labels)} only)" if len(labels) < len(tasks) else ""
            self.fields[name] = _option_field(option, only)

    def _describe_stage_fields(self, tasks: list[TaskType]) -> None:
        """Labels with units, help lines with each stage's default, the first stage's sizes
        pre-filled, and the qualifications' defaults (`default_qualifications`)."""
        reward = self.fields["reward"]
        reward.label = f"Reward per HIT ({currency_code()})"
        papers = {
            t.stage: t.default_reward(items_per_hit=t.default_items_per_hit, options={})
            for t in tasks
        }
        paid = {stage: f"{symbol()}{value}" for stage, value in papers.items() if value}
        reward.help_text = (
            "paid for each submitted HIT, before the platform's fees. Default (left empty): "
            + (f"the paper's reward ({_per_stage(paid)}), " if paid else "")
            + f"raised where it would pay under {symbol()}{min_hourly_pay()}/h at the "
            "stage's expected time; the next page shows the hourly pay."
        )
        for name, what in (
            (
                "items_per_hit",
                "questions in one HIT, gold questions included where the stage has them",
            ),
            (
                "assignments_per_hit",
                "different workers who answer each HIT (an adaptive run's "
                "follow-up batch: the round's number)",
            ),
        ):
            sizes = {stage: size[name] for stage, size in self.stage_sizes.items()}
            self.fields[name].help_text = f"{what}. Default: {_per_stage(sizes)}."
            if sizes:
                self.fields[name].initial = next(iter(sizes.values()))
        rules = default_qualifications()
        for name, what in (
            (
                "min_approval_percent",
                "workers with at least this share of their past work approved",
            ),
            ("min_approved_hits", "workers with at least this many approved HITs"),
        ):
            self.fields[name].initial = rules[name]
            self.fields[
                name
            ].help_text = f"MTurk and Prolific only: {what}. Default: {rules[name]}."
        locales = ",".join(rules["locales"])
        self.fields["locales"].initial = locales
        self.fields["locales"].help_text = (
            "MTurk and Prolific only: workers in these countries, two-letter codes separated "
            f"by commas. Default: {locales}."
        )

    # A service's parameter named in a refusal -> the field that sets it (`form_refusal`).
    SERVICE_FIELDS = {
        "lifetime_seconds": "lifetime_hours",
        "assignment_duration_seconds": "assignment_minutes",
        "options.allow_low_pay": "allow_low_pay",
        "qualifications": "locales",
    }

    def clean(self) -> dict[str, Any]:
        """A size sent as the chosen stage's default is no choice: the stage decides it, as
        when the field is left empty (an adaptive run's follow-up takes its round's number)."""
        data = super().clean() or {}
        sizes = self.stage_sizes.get(data.get("stage", ""), {})
        for name, default in sizes.items():
            if data.get(name) == default:
                data[name] = None
        return data

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
        shown = dict(option.choices).get(str(option.default), option.default)
        return forms.ChoiceField(
            label=option.label,
            choices=option.choices,
            initial=option.default,
            required=False,
            help_text=f"{option.help}{only}. Default: {shown}.",
        )
    return forms.BooleanField(
        label=option.label,
        initial=option.default,
        required=False,
        help_text=f"{option.help}{only}. Default: {'yes' if option.default else 'no'}.",
    )
