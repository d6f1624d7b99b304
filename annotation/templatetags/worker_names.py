"""`{% worker_name worker run_id platform_runs %}`: a worker as this user may see them (issue
47): the platform's id in the runs where the user may pay or contact workers
(`platform_runs`, from permissions.platform_id_runs; None: every run, staff), else the export
pseudonym."""

from __future__ import annotations

from django import template

from annotation.models import Worker
from annotation.selectors.pseudonyms import worker_pseudonym

register = template.Library()


@register.simple_tag
def worker_name(worker: Worker, run_id: int, platform_runs: frozenset[int] | None) -> str:
    if platform_runs is None or run_id in platform_runs:
        return worker.external_id
    return worker_pseudonym(provider=worker.provider, external_id=worker.external_id)
