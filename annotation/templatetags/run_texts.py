"""`batch_instructions`: the run's own instructions for a batch's stage ("" : the task page's
own), for the pages before a task (a provider's preview or arrival page, `task_example.html`),
which get the batch but no task view."""

from __future__ import annotations

from django import template

from annotation.models import Batch
from annotation.selectors.work.run_texts import run_instructions

register = template.Library()


@register.filter
def batch_instructions(batch: Batch) -> str:
    return run_instructions(batch.run.config, batch.stage)
