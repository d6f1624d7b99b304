"""Editing what a run's workers read: its information and consent text and each stage's
instructions. Each is versioned by a hash of its text (`selectors/work/run_texts.py`,
`selectors/work/invitations.py`): an edited consent text is a new version, so every worker is asked
again before their next task; an empty text goes back to the default (the papers' wording)."""

from __future__ import annotations

from typing import Any

from django.db import models, transaction

from annotation.models import EventAction, InstructionsChange, Run
from annotation.run_settings import CONSENT, INSTRUCTIONS, RunTexts
from annotation.selectors.work.invitations import DEFAULT_CONSENT, consent_version
from annotation.selectors.work.run_texts import (
    instructions_default,
    instructions_version,
    run_stages,
    same_text,
)
from annotation.services.checks import check_consent, check_stored_json
from annotation.services.events import event_record
from pipeline.errors import InputError

INSTRUCTIONS_LENGTH = 20_000


def _locked(run: Run) -> Run:
    """The run's row, locked: two edits never lose each other's settings."""
    locked = Run.objects.select_for_update().get(pk=run.pk)
    run.config = locked.config
    return locked


def _with(config: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """A copy of a run's config with the setting `key` set to `value` (None: left out)."""
    if value is None:
        return {k: v for k, v in config.items() if k != key}
    return {**config, key: value}


def _changed(
    *,
    run: Run,
    config: dict[str, Any],
    action: EventAction,
    data: dict[str, Any],
    row: models.Model | None = None,
) -> Run:
    """Store `config`, the change's state `row` if any, and the event, unless the text's
    version did not change."""
    if data["from"] == data["to"]:
        return run
    Run.objects.filter(pk=run.pk).update(config=config)
    run.config = config
    if row is not None:
        row.save()
    event_record(action=action, run=run, data=data)
    return run


@transaction.atomic
def run_consent_set(*, run: Run, text: str) -> Run:
    """The run's own information and consent text ("", or the default text as the console
    shows it to edit: the default text)."""
    locked = _locked(run)
    before = consent_version(locked.config)
    own = (
        text.replace("\r\n", "\n") if text.strip() and not same_text(text, DEFAULT_CONSENT) else ""
    )
    if own:
        check_consent(own)
    config = _with(locked.config, CONSENT.key, own or None)
    after = consent_version(config)
    data = {"from": before, "to": after, "text": own}
    return _changed(run=run, config=config, action=EventAction.RUN_CONSENT_CHANGED, data=data)


@transaction.atomic
def run_instructions_set(*, run: Run, stage: str, text: str) -> Run:
    """The run's own instructions for `stage` ("", or the task type's own as the console shows
    them to edit: the task type's own, the paper's)."""
    if stage not in dict(run_stages(run)):
        raise InputError(f"{stage!r} is not a stage of this run", field="stage")
    if len(text) > INSTRUCTIONS_LENGTH:
        raise InputError(f"must be at most {INSTRUCTIONS_LENGTH} characters", field="text")
    locked = _locked(run)
    own = dict(RunTexts.from_config(locked.config).instructions or {})
    before = instructions_version(locked.config, stage)
    if text.strip() and not same_text(text, instructions_default(run, stage)):
        own[stage] = text.replace("\r\n", "\n").strip()
    else:
        own.pop(stage, None)
    config = _with(locked.config, INSTRUCTIONS.key, own or None)
    check_stored_json(own, field="text")
    after = instructions_version(config, stage)
    data = {"stage": stage, "from": before, "to": after, "text": own.get(stage, "")}
    return _changed(
        run=run,
        config=config,
        action=EventAction.RUN_INSTRUCTIONS_CHANGED,
        data=data,
        row=InstructionsChange(run=run, stage=stage, from_version=before, to_version=after),
    )


@transaction.atomic
def run_texts_set(
    *, run: Run, consent: str | None = None, instructions: dict[str, str] | None = None
) -> Run:
    """Several texts at once (the API, the CLI): all saved, or none when one is refused."""
    if consent is not None:
        run_consent_set(run=run, text=consent)
    for stage, text in (instructions or {}).items():
        run_instructions_set(run=run, stage=stage, text=text)
    return run
