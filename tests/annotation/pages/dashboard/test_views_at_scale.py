"""The console at scale (issue 32): the dashboard (which shows the newest 20 runs), a run's
page and the API's lists cost the same number of SQL statements with 100 runs and 10,000 HITs
as with 2 runs (the dashboard reads the pay of all its shown batches at once)."""

import secrets
import string

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import (
    Assignment,
    Batch,
    Event,
    EventAction,
    Hit,
    HitStatus,
    RefusedAnswers,
    Review,
    ReviewStatus,
    Run,
)
from annotation.selectors.runs.dashboard import dashboard_runs
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.runs.runs import run_create
from annotation.services.work.worker_identity import worker_get_or_create

pytestmark = pytest.mark.django_db

HITS_PER_RUN = 100


def _grow(template: Batch, runs: int) -> None:
    """Runs of the template's dataset until there are `runs`, each with a published copy of
    the template batch holding HITS_PER_RUN open HITs."""
    while Run.objects.count() < runs:
        run = run_create(dataset=template.run.dataset, kind="bison")
        copy = Batch.objects.get(pk=template.pk)
        copy.pk, copy.run = None, run
        copy.save()
        Hit.objects.bulk_create(Hit(batch=copy, position=n) for n in range(HITS_PER_RUN))


def test_console_pages_and_lists_cost_the_same_at_2_and_100_runs(
    paired_run, admin_client, admin_user
):
    template = batch_publish(
        batch=batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="local")
    )
    api = APIClient()
    api.force_authenticate(admin_user)
    urls = {
        "dashboard": (admin_client, "/"),
        "run page": (admin_client, f"/runs/{paired_run.pk}/"),
        "api runs": (api, "/api/runs/"),
        "api jobs": (api, "/api/jobs/"),
        "api batches": (api, f"/api/runs/{paired_run.pk}/batches/"),
    }
    counts: dict[tuple[str, int], int] = {}
    for runs in (2, 20, 100):
        _grow(template, runs)
        for name, (client, url) in urls.items():
            client.get(url)  # caches warmed alike for both sizes
            with CaptureQueriesContext(connection) as queries:
                assert client.get(url).status_code == 200, name
            counts[(name, runs)] = len(queries)
    assert Hit.objects.count() >= 99 * HITS_PER_RUN
    grew = {name: (counts[(name, 2)], counts[(name, 100)]) for name in urls}
    assert all(small == large for small, large in grew.values()), (grew, counts)


def test_dashboard_counts_each_batch_s_hits_and_held_work(paired_run):
    """The dashboard's per-batch counts (one subquery each) on a batch with every case, next
    to a batch with none: nothing of one batch is counted for the other."""
    batch = batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.SELECTION, provider="local", items_per_hit=1
        )
    )
    hits = list(batch.hits.order_by("position"))
    assert len(hits) == 6
    Hit.objects.filter(pk__in=[hits[0].pk, hits[1].pk]).update(status=HitStatus.COMPLETE)
    now = timezone.now()
    work = [
        Assignment.objects.create(
            hit=hit,
            worker=worker_get_or_create(provider="local", external_id=f"w{n}"),
            accepted_at=now,
            confirmed=confirmed,
        )
        for n, (hit, confirmed) in enumerate([(hits[0], True), (hits[1], True), (hits[2], False)])
    ]
    Review.objects.create(assignment=work[0], status=ReviewStatus.OPEN)
    Review.objects.create(assignment=work[1], status=ReviewStatus.APPROVED)
    for _ in range(2):  # MTurk's assignment ids: 30 upper-case letters and digits
        remote = "".join(secrets.choice(string.ascii_uppercase + string.digits) for _ in range(30))
        RefusedAnswers.objects.create(batch=batch, remote_assignment_id=remote)
    # The log alone counts nothing: the dashboard reads the rows.
    for action in (EventAction.MTURK_ANSWERS_REFUSED, EventAction.BATCH_EXPIRED):
        Event.objects.create(action=action, batch=batch, run=paired_run)
    Hit.objects.filter(pk=hits[3].pk).update(cannot_grow_at=now)
    Hit.objects.filter(pk=hits[4].pk).update(cannot_grow_at=now, reoffered_as=hits[5])
    empty = Batch.objects.get(pk=batch.pk)
    empty.pk = None
    empty.save()
    Hit.objects.create(batch=empty, position=0)
    rows = {row["batch"].pk: row for row in dashboard_runs()[0]["batches"]}
    counted = ("hits", "open", "held", "unconfirmed", "refused", "stuck")
    assert {key: rows[batch.pk][key] for key in counted} == {
        "hits": 6,
        "open": 4,
        "held": 1,
        "unconfirmed": 1,
        "refused": 2,
        "stuck": 1,
    }
    assert {key: rows[empty.pk][key] for key in counted} == dict.fromkeys(counted, 0) | {
        "hits": 1,
        "open": 1,
    }
