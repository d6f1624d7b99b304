"""Run by crowd/local/test_views_sqlite_concurrency.py and management/commands/test_serve.py on the embedded
default (a SQLite file): `setup` migrates and makes a published BISON stage-2 batch of small HITs with one
invitation per worker; `work` is one worker's browser in its own process (join link, then next,
task page, submit, until no work is left), through the real views and middleware; `due` makes
one submitted assignment past its approval delay; `import` enqueues a dataset import job;
`state` reads a job's and an assignment's state. Prints one JSON line."""

import json
import os
import re
import sys
import time
from pathlib import Path

# Run as a script, Python puts this file's folder first on sys.path; there the test packages
# that mirror annotation's (selectors/, ...) would hide the standard library's modules of the
# same names (django imports subprocess, which imports selectors). The checkout's root takes
# its place.
sys.path[0] = str(Path(__file__).resolve().parents[2])

import django  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()

from django.test import Client  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

# 40 HITs of two pairs for each of the concurrency test's four workers: without WAL, immediate
# transactions and a busy timeout they still meet about 20 "database is locked" errors (503).
IMAGES = 60


def setup(workers: int, limit: int | None = None) -> dict:
    from annotation.crowd.local.invitations import invitations_create
    from annotation.flows.bison.vocabulary import BisonStage
    from annotation.services.runs.batches import batch_create, batch_publish
    from tests.annotation.driver_run import paired_run

    run = paired_run(images=IMAGES, name="embedded")
    batch = batch_publish(
        batch=batch_create(
            run=run,
            stage=BisonStage.SELECTION,
            provider="local",
            items_per_hit=2,
            assignments_per_hit=workers,
            limit=limit,
        )
    )
    invitations = invitations_create(run=run, labels=[f"w{i}" for i in range(workers)])
    return {"batch": batch.pk, "tokens": [i.token for i in invitations]}


def _answers(page: str) -> dict[str, str]:
    """The first offered value of every question on a task page, as a browser would post it."""
    values: dict[str, str] = {}
    for name, value in re.findall(r'<input type="radio" name="([^"]+)" value="([^"]+)"', page):
        values.setdefault(name, value)
    return values


def work(batch_id: int, token: str) -> dict:
    setup_test_environment()  # the test client's host name is allowed
    client = Client(raise_request_exception=False)  # a 500 is counted, as a browser sees it
    response = client.get(f"/join/{token}/")
    if response.status_code == 200 and b'name="version"' in response.content:
        version = re.search(rb'name="version" value="([^"]+)"', response.content)
        assert version is not None
        response = client.post(f"/join/{token}/", {"version": version.group(1).decode()})
    statuses: dict[str, int] = {}
    submitted, errors = 0, []
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        response = client.get(f"/work/{batch_id}/next/")
        if response.status_code != 302:
            statuses[str(response.status_code)] = statuses.get(str(response.status_code), 0) + 1
            if response.status_code >= 500:
                errors.append(f"next: {response.status_code}")
                continue
            break  # no work left (or not allowed): a worker would stop here
        url = response["Location"]
        page = client.get(url)
        if page.status_code != 200:
            errors.append(f"task page: {page.status_code}")
            continue
        posted = client.post(url, _answers(page.content.decode()))
        if posted.status_code == 302:
            submitted += 1
        else:
            errors.append(f"submit: {posted.status_code}")
    return {"submitted": submitted, "errors": errors, "statuses": statuses}


def check(batch_id: int) -> dict:
    from annotation.models import Answer
    from tests.annotation.driver_run import submitted_and_partial

    submitted, partial = submitted_and_partial(batch_id)
    answers = Answer.objects.filter(assignment__hit__batch_id=batch_id).count()
    return {"submitted": submitted, "partial": partial, "answers": answers}


def due(batch_id: int) -> dict:
    """One HIT claimed and submitted by a worker, its approval delay long past."""
    from datetime import timedelta

    from django.utils import timezone

    from annotation.flow_registry import task_type_for
    from annotation.models import Assignment, Batch
    from annotation.services.work.claim import assignment_claim_next
    from annotation.services.work.submit import assignment_submit
    from annotation.services.work.worker_identity import worker_get_or_create

    worker = worker_get_or_create(provider="local", external_id="due")
    taken = assignment_claim_next(batch=Batch.objects.get(pk=batch_id), worker=worker)
    assert taken is not None
    task = task_type_for(taken.hit.batch.stage)
    answers = {
        f"q{q.position}": task.worker_choices(question=q)[0] for q in taken.hit.questions.all()
    }
    assignment_submit(assignment_id=taken.pk, worker=worker, answers=answers)
    long_ago = timezone.now() - timedelta(days=60)
    Assignment.objects.filter(pk=taken.pk).update(submitted_at=long_ago)
    return {"assignment": taken.pk}


def enqueue_import(path: str) -> dict:
    from annotation.services.datasets.dataset_jobs import dataset_import_start

    return {"job": dataset_import_start(path=path, name="background").pk}


def state(job_id: int, assignment_id: int) -> dict:
    from annotation.models import Assignment, Job

    job = Job.objects.get(pk=job_id)
    return {
        "job": job.state,
        "progress": job.progress,
        "assignment": Assignment.objects.get(pk=assignment_id).state,
    }


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "setup":
        result = setup(int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else None)
    elif mode == "work":
        result = work(int(sys.argv[2]), sys.argv[3])
    elif mode == "due":
        result = due(int(sys.argv[2]))
    elif mode == "import":
        result = enqueue_import(sys.argv[2])
    elif mode == "state":
        result = state(int(sys.argv[2]), int(sys.argv[3]))
    else:
        result = check(int(sys.argv[2]))
    print(json.dumps(result), flush=True)
