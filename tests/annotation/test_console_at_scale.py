"""The console at scale (issue 32): the dashboard (which shows the newest 20 runs), a run's
page and the API's lists cost the same number of SQL statements with 100 runs and 10,000 HITs
as with 2 runs (the dashboard reads the pay of all its shown batches at once)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Batch, Hit, Run
from annotation.services.batches import batch_create, batch_publish
from annotation.services.runs import run_create

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
