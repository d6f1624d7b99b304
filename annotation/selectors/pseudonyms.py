"""Worker ids as exports show them: a keyed hash, so a published dataset names no worker.

The key is the installation's SECRET_KEY (random per installation, see config/settings.py):
the same worker gets the same pseudonym in every export of this installation, and no one
without the key can recompute it from an MTurk worker id.
"""

from __future__ import annotations

from django.db.models import Exists, OuterRef
from django.utils.crypto import salted_hmac

from annotation.models import Assignment, Run, Worker


def worker_pseudonym(*, provider: str, external_id: str) -> str:
    digest = salted_hmac(
        "crowdvl.export.worker", f"{provider}:{external_id}", algorithm="sha256"
    ).hexdigest()
    return "w-" + digest[:24]


def run_worker_pseudonyms(*, run: Run) -> dict[int, str]:
    """The export pseudonym of every worker who took an assignment in `run`, by the worker's
    row id: the workers are found by a join on the run, never a list of their ids (a list
    that grows with the run's crowd is one bound value per worker)."""
    rows = Worker.objects.filter(
        Exists(Assignment.objects.filter(worker=OuterRef("pk"), hit__batch__run=run))
    ).values_list("pk", "provider", "external_id")
    return {pk: worker_pseudonym(provider=p, external_id=e) for pk, p, e in rows}
