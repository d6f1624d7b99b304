"""Reading a submitted task form, whichever provider's page posted it."""

from __future__ import annotations

from typing import Any

from annotation.tasktypes import task_type_for


def answers_from(data: Any, stage: str) -> dict[str, str]:
    """The answers (q0, q1, …) of a submitted task form, as the stage's task type reads them."""
    task = task_type_for(stage)
    return {k: task.form_value(data=data, key=k) for k in data if k[:1] == "q" and k[1:].isdigit()}
