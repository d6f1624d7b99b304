"""What a run's workers read besides the questions: the information and consent text
(`selectors/work/invitations.py`) and each stage's instructions. The instructions are the task
type's own template (the paper's wording) unless the run sets its own text for the stage
(its setting `instructions`, by stage); like consent, a text's version is a hash of it."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from html.parser import HTMLParser
from typing import Any

from django.template import Context
from django.template.loader import get_template
from django.template.loader_tags import BlockNode

from annotation.flow_registry import flow_for_kind
from annotation.models import Run
from annotation.run_settings import RunTexts, run_settings
from annotation.selectors.work.invitations import run_consent
from annotation.tasktypes import task_type_for

DEFAULT_VERSION = "default"  # the task type's own instructions


def run_instructions(config: Mapping[str, Any] | None, stage: str) -> str:
    """The run's own instructions for `stage` ("" when the task type's own apply), from its
    stored config (a task page reads it without the run)."""
    own = RunTexts.from_config(config or {}).instructions
    return str(own.get(stage) or "") if own is not None else ""


def instructions_version(config: Mapping[str, Any] | None, stage: str) -> str:
    text = run_instructions(config, stage)
    if not text:
        return DEFAULT_VERSION
    return hashlib.sha256(text.encode()).hexdigest()[:12]


class _Text(HTMLParser):
    """The instructions' few tags as plain text, the way a run's own text is written and
    shown (`linebreaks`): paragraphs apart, list items one a line ("- " or "1. ")."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = [""]
        self.numbers: list[int | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("p", "ul", "ol"):
            self.lines += ["", ""]
            if tag != "p":
                self.numbers.append(0 if tag == "ol" else None)
        elif tag == "li":
            number = self.numbers[-1] if self.numbers else None
            if number is not None:
                self.numbers[-1] = number = number + 1
            self.lines.append(f"{number}. " if number is not None else "- ")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("ul", "ol") and self.numbers:
            self.numbers.pop()

    def handle_data(self, data: str) -> None:
        self.lines[-1] += data

    def text(self) -> str:
        lines = [" ".join(line.split()) for line in self.lines]
        return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def instructions_default(run: Run, stage: str) -> str:
    """The stage's own instructions (the paper's wording, the task page's `instructions`
    block) as plain text for a HIT of the stage's default size: what the console offers to
    edit, and what a saved text equal to it stays (the default)."""
    task = task_type_for(stage)
    template = get_template(task.template_name).template  # type: ignore[attr-defined]
    blocks = [b for b in template.nodelist.get_nodes_by_type(BlockNode) if b.name == "instructions"]
    if not blocks:
        return ""
    example = task.instructions_example(run=run)
    context = Context({"questions": [example] * task.default_items_per_hit})
    with context.bind_template(template):
        html = blocks[0].nodelist.render(context)
    parser = _Text()
    parser.feed(html)
    return parser.text()


def same_text(text: str, default: str) -> bool:
    """Whether an edited text is the default as shown (spacing and line ends aside)."""
    return text.split() == default.split()


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
        "consent": {**run_consent(run), "own_text": bool(run_settings(run).consent)},
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
