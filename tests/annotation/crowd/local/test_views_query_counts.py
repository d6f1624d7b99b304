"""The worker's path costs a constant number of SQL statements per request, whatever the HIT
size: claim, task page (first view of a HIT and every later one), image, submit."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.flows.bison.vocabulary import BisonStage
from annotation.services.runs.batches import batch_create, batch_publish
from tests.factories import join

pytestmark = pytest.mark.django_db

# The most each step may cost, sessions in the database as here (with CROWDVL_CACHE_URL the
# session is read from the shared cache: one statement less on every step but the image).
# Each submit here completes its HIT and batch (6 statements more than on a HIT left open:
# one of them asks whether the run's status follows, which here it does not, as another batch
# of the run stays on offer); an image once cached on disk costs one: whether its page's
# assignment is still open (an image URL stops working when the assignment ends, issue 25).
# The claim and the submit are the ORM's since issue 49 (the prepared-SQL twins are gone): one
# statement more per claim, three per submit.
LIMITS = {
    "claim": 12,
    "first page": 6,
    "page": 2,
    "image": 2,
    "image again": 1,
    "submit": 21,
}


def _path(client, batch) -> dict[str, int]:
    counts = {}

    def count(step, method, url, data=None):
        with CaptureQueriesContext(connection) as ctx:
            response = getattr(client, method)(url, data or {})
        counts[step] = len(ctx)
        return response

    page_url = count("claim", "get", f"/work/{batch.pk}/next/")["Location"]
    count("first page", "get", page_url)
    html = count("page", "get", page_url).content.decode()
    image = re.findall(r'<img src="(/img/[^"]+)"', html)[0]
    count("image", "get", image)  # the first request caches the JPEG on disk
    assert count("image again", "get", image).status_code == 200
    answers = {}
    for key, value in re.findall(r'name="(q\d+)" value="([^"]*)"', html):
        answers.setdefault(key, value)
    response = count("submit", "post", page_url, answers)
    assert response.status_code == 302, response.content.decode()[:2000]
    return counts


def test_worker_path_queries_do_not_grow_with_the_hit(client, paired_run):
    small = batch_publish(
        batch=batch_create(
            run=paired_run,
            stage=BisonStage.SELECTION,
            provider="local",
            items_per_hit=1,
            limit=2,
        )
    )
    large = batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.SELECTION, provider="local", items_per_hit=4
        )
    )
    assert large.hits.get().questions.count() == 4 and small.hits.count() == 2
    join(client, paired_run, "w1")
    _path(client, small)  # the worker's first claim also puts them in the stage's pool
    # A stage-3 batch on offer, from that first answer: the run's status stays "verifying"
    # (how it moves once every batch ended is `services/runs/test_runs_status.py`'s).
    batch_publish(
        batch=batch_create(run=paired_run, stage=BisonStage.VERIFICATION, provider="local")
    )
    one, four = _path(client, small), _path(client, large)
    assert one == four
    for step, limit in LIMITS.items():
        assert four[step] <= limit, (step, four)
