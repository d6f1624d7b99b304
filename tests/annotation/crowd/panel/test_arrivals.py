"""New arrivals by a panel's study link (issue 47): anyone holding the link can type any id, so
new participants are rate-limited per address and per batch (a 429 page that writes
nothing), nothing is written before work starts, and claims nobody answered on never lock
out the last tasks."""

import re
from datetime import timedelta

import pytest
from django.contrib.sessions.models import Session
from django.db.models import F
from django.test import Client

from annotation.crowd.panel.arrivals import BUSY_ADDRESS, BUSY_BATCH
from annotation.crowd.panel.models import Participant
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Assignment, AssignmentState, Consent, Event, Worker
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.holds import idle_hold_seconds
from tests.annotation.crowd.panel.player import PanelDriver

pytestmark = pytest.mark.django_db

TASK = re.compile(r"/panel/task/(\d+)/$")


def panel_batch(run, *, items_per_hit=1, limit=3):
    """A batch of `limit` tasks of the run's 6 items (one participant each)."""
    batch = batch_create(
        run=run,
        stage=BisonStage.SELECTION,
        provider="panel",
        items_per_hit=items_per_hit,
        assignments_per_hit=1,
        limit=limit,
    )
    return batch_publish(batch=batch)


def arrive(http, batch, participant):
    """Open the study link as `participant`; the response (302 when the session is bound)."""
    return http.get(f"/panel/{batch.pk}/", {"participantId": participant})


def consent(http, batch):
    page = http.get(f"/panel/{batch.pk}/").content
    version = re.search(rb'name="version" value="([^"]+)"', page).group(1).decode()
    assert http.post(f"/panel/{batch.pk}/", {"version": version}).status_code == 302


def rows():
    return (
        Worker.objects.count(),
        Participant.objects.count(),
        Consent.objects.count(),
        Event.objects.count(),
        Assignment.objects.count(),
    )


def test_one_client_with_made_up_ids_cannot_hold_every_task(paired_run, monkeypatch):
    """The audit's attack: 40 made-up ids from one client took all 4 tasks, and the next real
    participant was told to return the study."""
    # One rate-limit window for the 40 arrivals however slow the machine (the window is the
    # clock's minute: a loop crossing it would be let through again).
    from types import SimpleNamespace

    from annotation import ratelimit

    now = ratelimit.time.time()
    monkeypatch.setattr(ratelimit, "time", SimpleNamespace(time=lambda: now))
    batch = panel_batch(paired_run, limit=4)
    assert batch.hits.count() == 4
    spam = Client(REMOTE_ADDR="10.6.6.6")
    refused = 0
    for n in range(40):
        response = arrive(spam, batch, f"FAKE{n}")
        if response.status_code == 429:
            refused += 1
            continue
        consent(spam, batch)
        spam.get(f"/panel/{batch.pk}/next/")
    assert refused == 20  # CROWDVL_PANEL_ARRIVALS_PER_MINUTE, 20 by default
    held = Assignment.objects.filter(state=AssignmentState.ACCEPTED)
    assert held.count() == 4  # every task held, nobody answering
    real = Client(REMOTE_ADDR="10.1.2.3")
    driver = PanelDriver(real)
    # Just after: no "no work" code (return the study) but a page saying when to come back.
    assert driver.take(batch, "REAL1") is None
    page = real.get(f"/panel/{batch.pk}/next/")
    assert page.status_code == 409 and "taken for now" in page.content.decode()
    assert not Event.objects.filter(action="panel.finished").exists()
    # Once the holds are past their short time, the real participant gets a task.
    held.update(accepted_at=F("accepted_at") - timedelta(seconds=idle_hold_seconds(batch) + 1))
    mine = driver.take(batch, "REAL1")
    assert mine is not None and mine.worker.external_id == "REAL1"
    assert held.count() == 4 and Assignment.objects.filter(state="abandoned").count() == 1


def test_a_flood_of_consent_clicks_writes_no_rows(client, paired_run):
    batch = panel_batch(paired_run)
    before = rows()
    for n in range(15):
        assert arrive(client, batch, f"FAKE{n}").status_code == 302
        consent(client, batch)
        assert 'id="start"' in client.get(f"/panel/{batch.pk}/").content.decode()
    assert rows() == before
    # Work starts: the rows are written then, with the time the consent was given.
    client.get(f"/panel/{batch.pk}/next/")
    participant = Participant.objects.get()
    assert participant.worker.external_id == "FAKE14"
    assert Consent.objects.filter(worker=participant.worker).count() == 1


def test_arrivals_past_the_address_limit_get_a_page_and_write_nothing(
    client, paired_run, settings, one_rate_window
):
    settings.CROWDVL_RATE_LIMITS = {"panel-arrival": 2}
    batch = panel_batch(paired_run)
    driver = PanelDriver(client)
    first = driver.take(batch, "P1")
    answers = {f"q{q.position}": "none" for q in first.hit.questions.all()}
    assert client.post(f"/panel/task/{first.pk}/", answers).status_code == 302
    driver.take(batch, "P2")
    before, sessions = rows(), Session.objects.count()
    response = arrive(client, batch, "P3")
    assert response.status_code == 429 and BUSY_ADDRESS in response.content.decode()
    assert rows() == before and Session.objects.count() == sessions
    # The session stays bound to P2; a reload of P2's own link is not a new arrival.
    assert arrive(client, batch, "P2").status_code == 302
    assert client.get(f"/panel/{batch.pk}/next/").status_code == 302  # P2's task
    # A participant coming back with submitted work is no newcomer.
    assert arrive(client, batch, "P1").status_code == 302
    # Another address is not affected.
    assert arrive(Client(REMOTE_ADDR="10.0.0.2"), batch, "P4").status_code == 302


def test_arrivals_past_the_batch_limit_get_a_page(paired_run, settings, one_rate_window):
    settings.CROWDVL_RATE_LIMITS = {"panel-batch-arrival": 3}
    batch = panel_batch(paired_run)
    other = panel_batch(paired_run)
    for n in range(3):
        assert arrive(Client(REMOTE_ADDR=f"10.0.1.{n}"), batch, f"P{n}").status_code == 302
    response = arrive(Client(REMOTE_ADDR="10.0.1.9"), batch, "P9")
    assert response.status_code == 429 and BUSY_BATCH in response.content.decode()
    assert arrive(Client(REMOTE_ADDR="10.0.1.9"), other, "P9").status_code == 302


def test_a_participant_whose_idle_task_went_to_someone_else_is_told_so(client, paired_run):
    batch = panel_batch(paired_run, limit=1)  # one task
    driver = PanelDriver(client)
    idle = driver.take(batch, "SLOW")
    Assignment.objects.filter(pk=idle.pk).update(
        accepted_at=idle.accepted_at - timedelta(seconds=idle_hold_seconds(batch) + 1)
    )
    other = PanelDriver(Client(REMOTE_ADDR="10.0.0.5")).take(batch, "NEXT")
    assert other is not None and other.hit_id == idle.hit_id
    driver.arrive(batch, "SLOW")
    answers = {f"q{q.position}": "none" for q in idle.hit.questions.all()}
    page = client.post(f"/panel/task/{idle.pk}/", answers)
    assert page.status_code == 409 and "went to another participant" in page.content.decode()
    assert f'href="/panel/{batch.pk}/next/"' in page.content.decode()
    idle.refresh_from_db()
    assert idle.state == AssignmentState.ABANDONED and not idle.answers.exists()
