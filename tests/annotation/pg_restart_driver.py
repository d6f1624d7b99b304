"""Run by crowd/local/test_views_postgres_restart.py against a PostgreSQL server the test
started itself: migrate, make a BISON stage-2 batch of one-item HITs, then let workers claim and submit one
HIT after another as requests would (connections checked at each request's start and end),
retrying what a restart broke, and finally check that nothing is half-written.
Prints `submitted <n>` as it goes and one JSON line at the end."""

import json
import os
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

from django.db import DatabaseError, close_old_connections  # noqa: E402
from django.db.models import Count, F, Q  # noqa: E402

# 98 one-item HITs: the restart lands at submission 40, with 58 left to show the reconnection.
IMAGES = 70


def setup():
    from annotation.flows.bison.vocabulary import BisonStage
    from annotation.services.runs.batches import batch_create, batch_publish
    from tests.annotation.driver_run import paired_run

    run = paired_run(images=IMAGES, name="restart")
    batch = batch_create(
        run=run,
        stage=BisonStage.SELECTION,
        provider="local",
        items_per_hit=1,
        assignments_per_hit=1,
    )
    return batch_publish(batch=batch)


def work(batch_id: int) -> dict:
    from django.test import Client

    from annotation.flow_registry import task_type_for
    from annotation.models import Batch
    from annotation.services.work.claim import assignment_claim_next
    from annotation.services.work.submit import assignment_submit
    from annotation.services.work.worker_identity import worker_get_or_create

    client = Client(raise_request_exception=False)  # the whole request path, error pages too
    pages: dict[str, int] = {}

    def page() -> None:
        # An invitation link: a worker's page that reads the database before answering.
        status = str(client.get("/join/not-a-token/", secure=True).status_code)
        pages[status] = pages.get(status, 0) + 1

    submitted, errors, workers = 0, 0, 20
    deadline = time.monotonic() + 120
    turn = 0
    while time.monotonic() < deadline:
        close_old_connections()  # as at a request's start
        try:
            batch = Batch.objects.get(pk=batch_id)
            worker = worker_get_or_create(provider="local", external_id=f"w{turn % workers}")
            assignment = assignment_claim_next(batch=batch, worker=worker)
            if assignment is None:
                break
            task = task_type_for(batch.stage)
            answers = {
                f"q{q.position}": task.worker_choices(question=q)[0]
                for q in assignment.hit.questions.all()
            }
            assignment_submit(assignment_id=assignment.pk, worker=worker, answers=answers)
            submitted += 1
            print(f"submitted {submitted}", flush=True)
            page()
            turn += 1
        except DatabaseError as exc:  # the server went away: the browser would retry
            errors += 1
            print(f"error {type(exc).__name__}", flush=True)
            page()  # during the outage: a "try again" page, not a server error
            time.sleep(0.05)
        finally:
            close_old_connections()  # as at a request's end
    return {"submitted": submitted, "errors": errors, "pages": pages}


def check(batch_id: int, submitted: int) -> dict:
    from annotation.models import Answer, AssignmentState, Hit
    from tests.annotation.driver_run import submitted_and_partial

    close_old_connections()
    done, partial = submitted_and_partial(batch_id)
    orphans = Answer.objects.filter(assignment__hit__batch_id=batch_id).exclude(
        assignment__state=AssignmentState.SUBMITTED
    )
    overfull = (
        Hit.objects.filter(batch_id=batch_id)
        .annotate(n=Count("assignments", filter=Q(assignments__state=AssignmentState.SUBMITTED)))
        .filter(n__gt=F("max_assignments"))
        .count()
    )
    open_hits = Hit.objects.filter(batch_id=batch_id).exclude(
        assignments__state=AssignmentState.SUBMITTED
    )
    return {
        "db_submitted": done,
        "driver_submitted": submitted,
        "partial_assignments": partial,
        "orphan_answers": orphans.count(),
        "overfull_hits": overfull,
        "hits_without_work": open_hits.count(),
    }


if __name__ == "__main__":
    batch = setup()
    print("ready", flush=True)
    result = work(batch.pk)
    print(json.dumps({**result, **check(batch.pk, result["submitted"])}), flush=True)
