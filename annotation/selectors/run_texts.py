"""What a run's workers read besides the questions: the information and consent text
(`selectors/invitations.py`) and each stage's instructions. The instructions are the task
type's own template (the paper's wording) unless the run sets its own text for the stage
(`config["instructions"][stage]`); like consent, a text's version is a hash of it."""

from __future__ import annotations

import hashlib
from typing import Any

from annotation.flow_registry import flow_for_kind
from annotation.models import Run
from annotation.selectors.invitations import run_consent

DEFAULT_VERSION = "default"  # the task type's own instructions


def run_instructions(config: dict[str, Any] | None, stage: str) -> str:
    """The run's own instructions for `stage` ("" when the task type's own apply)."""
    own = (config or {}).get("instructions")
    return str(own.get(stage) or "") if isinstance(own, dict) else ""


def instructions_version(config: dict[str, Any] | None, stage: str) -> str:
    text = run_instructions(config, stage)
    if not text:
        return DEFAULT_VERSION
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def run_stages(run: Run) -> list[tuple[str, str]]:
    """The stages of the run's flow: (stage, title)."""
    flow = flow_for_kind(run.kind)
    return [(t.stage, t.title) for t in flow.task_types] if flow else []


def instructions_record(run: Run) -> dict[str, dict[str, Any]]:
    """What an export's manifest says about instructions: per stage, the version workers saw
    now and whether it is the run's own text (the text itself is in the run's events)."""
    return {
        stage: {
            "version": instructions_version(run.config, stage),
            "own_text": bool(run_instructions(run.config, stage)),
        }
        for stage, _ in run_stages(run)
    }


def run_texts(run: Run) -> dict[str, Any]:
    """The console's and the API's view of a run's texts: consent and instructions."""
    return {
        "consent": {**run_consent(run), "own_text": bool(run.config.get("consent"))},
        "instructions": [
            {
                "stage": stage,
                "title": title,
                "text": run_instructions(run.config, stage),
                "version": instructions_version(run.config, stage),
            }
            for stage, title in run_stages(run)
        ],
    }
