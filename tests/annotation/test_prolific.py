"""Prolific as the paid crowd (issue 24), against the stateful stand-in of its API
(`annotation/crowd/prolific/standin.py`): nothing reaches the network."""

import time
from decimal import Decimal

import pytest
from django.test import Client

from annotation.crowd.prolific import studies
from annotation.crowd.prolific.client import ProlificClient, ProlificError
from annotation.crowd.prolific.fees import minor_units
from annotation.crowd.prolific.publish import prolific_publish_start
from annotation.crowd.prolific.standin import ProlificStandIn, standin_session
from annotation.crowd.prolific.testing import SECRET, ProlificDriver
from annotation.errors import ServiceError
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import (
    Assignment,
    AssignmentState,
    Batch,
    BatchStatus,
    Bonus,
    Event,
    Export,
    HitStatus,
    PoolQualification,
    Worker,
)
from annotation.selectors.counting import counted
from annotation.services.batches import batch_create, batch_expire, batch_publish, batch_sync
from annotation.services.decisions import assignment_approve, assignment_reject
from annotation.services.worker_actions import worker_block, worker_bonus
from pipeline.errors import InputError
from tests.factories import selection_done_factory

pytestmark = pytest.mark.django_db

LONG = (
    "LOW_EFFORT: the same caption was chosen for every pair, including pairs where it plainly "
    "describes the other image; please read the instructions."
)


@pytest.fixture
def pro(client, settings):
    settings.CROWDVL_PUBLIC_URL = "https://crowd.example.org"
    driver = ProlificDriver(client)
    yield driver
    driver.done()


def draft(run, **options):
    return batch_create(
        run=run, stage=BisonStage.SELECTION, provider="prolific", items_per_hit=2, **options
    )


def answers_for(assignment):
    return {f"q{q.position}": "none" for q in assignment.hit.questions.all()}


def test_one_study_per_batch_from_the_batch(pro, paired_run):
    batch = pro.publish(draft(paired_run))
    assert batch.status == BatchStatus.PUBLISHED
    [study] = pro.standin.studies.values()
    assert batch.provider_hit_type_id == study["id"] and study["status"] == "ACTIVE"
    hits = list(batch.hits.all())
    assert study["total_available_places"] == len(hits) * batch.assignments_per_hit
    assert study["reward"] == minor_units(batch.reward)
    url = study["external_study_url"]
    assert url.startswith(f"https://crowd.example.org/prolific/study/{batch.pk}/?")
    for placeholder in ("{{%PROLIFIC_PID%}}", "{{%STUDY_ID%}}", "{{%SESSION_ID%}}"):
        assert placeholder in url
    assert study["maximum_allowed_time"] >= batch.assignment_duration_seconds // 60
    codes = {c["code_type"]: c for c in study["completion_codes"]}
    assert codes["COMPLETED"]["actions"] == [{"action": "MANUALLY_REVIEW"}]
    assert codes["NO_CONSENT"]["actions"][0]["action"] == "REQUEST_RETURN"
    assert codes["COMPLETED"]["code"] == studies.completion_code(batch, studies.COMPLETED)
    filters = {f["filter_id"]: f for f in study["filters"]}
    assert filters["approval_rate"]["selected_range"]["lower"] == 97
    assert "United Kingdom" in filters["current-country-of-residence"]["selected_values"]
    # BISON stage 2's study excludes stage 3's pool and the project block.
    blocked = set(filters["participant_group_blocklist"]["selected_values"])
    pool3 = PoolQualification.objects.get(run=paired_run, stage=BisonStage.VERIFICATION)
    assert pool3.qualification_id in blocked and len(blocked) == 2
    assert all(h.provider_hit_id.startswith(study["id"]) for h in batch.hits.all())


def test_a_retry_after_a_crash_between_create_and_save_makes_no_second_study(pro, paired_run):
    batch = draft(paired_run)
    real = pro.client.call

    def crash_after_create(method, path, **kwargs):
        body = real(method, path, **kwargs)
        if (method, path) == ("POST", "studies/"):
            raise RuntimeError("the worker died before the study's id was saved")
        return body

    pro.client.call = crash_after_create
    with pytest.raises(RuntimeError):
        batch_publish(batch=batch)
    pro.client.call = real
    batch.refresh_from_db()
    assert batch.provider_hit_type_id == "" and batch.status == BatchStatus.DRAFT
    batch_publish(batch=batch)
    batch.refresh_from_db()
    assert len(pro.standin.studies) == 1
    assert batch.provider_hit_type_id == next(iter(pro.standin.studies))
    assert pro.standin.calls.count(("POST", "studies/")) == 1
    assert batch.status == BatchStatus.PUBLISHED


def test_a_workspace_in_another_currency_is_refused_never_converted(pro, paired_run):
    pro.standin.currency = "GBP"  # the installation counts in USD (the driver's setting)
    with pytest.raises(ServiceError, match="nothing is converted"):
        prolific_publish_start(batch=draft(paired_run), provider=pro.provider)
    assert not pro.standin.studies


def test_pay_under_prolifics_minimum_is_refused_even_when_low_pay_is_allowed(pro, paired_run):
    cheap = draft(paired_run, reward=Decimal("0.01"), options={"allow_low_pay": True})
    with pytest.raises(ServiceError, match="Prolific's enforced minimum"):
        batch_publish(batch=cheap)
    assert not pro.standin.studies


def test_budget_daily_cap_and_balance_are_checked_before_publishing(pro, paired_run, settings):
    batch = draft(paired_run)
    settings.CROWDVL_BUDGET = "0.10"
    with pytest.raises(ServiceError, match="CROWDVL_BUDGET"):
        prolific_publish_start(batch=batch, provider=pro.provider)
    settings.CROWDVL_BUDGET = None
    settings.CROWDVL_DAILY_CAP = "0.10"
    with pytest.raises(ServiceError, match="CROWDVL_DAILY_CAP"):
        prolific_publish_start(batch=batch, provider=pro.provider)
    settings.CROWDVL_DAILY_CAP = None
    pro.standin.balance = 1
    with pytest.raises(ServiceError, match="available"):
        prolific_publish_start(batch=batch, provider=pro.provider)
    assert not pro.standin.studies


def test_the_urls_ids_are_claims_checked_at_prolific(pro, paired_run):
    batch = pro.publish(draft(paired_run))
    study = batch.provider_hit_type_id
    sid = pro.standin.start(study, "alice")
    browser = Client()
    # Another study's id, or malformed ids: refused before anything is asked or written.
    bad = browser.get(
        f"/prolific/study/{batch.pk}/",
        {"PROLIFIC_PID": "alice", "STUDY_ID": "other", "SESSION_ID": sid},
    )
    assert bad.status_code == 400
    # Mallory claims Alice's session: Prolific says it is Alice's.
    page = browser.get(
        f"/prolific/study/{batch.pk}/",
        {"PROLIFIC_PID": "mallory", "STUDY_ID": study, "SESSION_ID": sid},
    )
    assert page.status_code == 200 and b"consent" in page.content
    assert b"mallory" not in page.content  # the page never echoes the participant id
    version = page.content.split(b'name="version" value="')[1].split(b'"')[0].decode()
    refused = browser.post(f"/prolific/study/{batch.pk}/", {"version": version})
    assert refused.status_code == 403
    # A session Prolific does not know at all.
    browser.get(
        f"/prolific/study/{batch.pk}/",
        {"PROLIFIC_PID": "bob", "STUDY_ID": study, "SESSION_ID": "s" + "9" * 23},
    )
    refused = browser.post(f"/prolific/study/{batch.pk}/", {"version": version})
    assert refused.status_code == 403 and b"does not know" in refused.content
    assert not Worker.objects.filter(provider="prolific").exists()
    assert not Assignment.objects.filter(hit__batch=batch).exists()


def test_declining_consent_returns_the_participant_with_the_no_consent_code(pro, paired_run):
    batch = pro.publish(draft(paired_run))
    pro.arrive(batch, "carol")
    browser = pro.browsers["carol"]
    page = browser.get(
        f"/prolific/study/{batch.pk}/",
        {
            "PROLIFIC_PID": "carol",
            "STUDY_ID": batch.provider_hit_type_id,
            "SESSION_ID": pro.sessions["carol"],
        },
    )
    version = page.content.split(b'name="version" value="')[1].split(b'"')[0].decode()
    response = browser.post(f"/prolific/study/{batch.pk}/", {"version": version, "decline": "1"})
    assert response["Location"].endswith(studies.completion_code(batch, studies.NO_CONSENT))
    assert not Assignment.objects.filter(hit__batch=batch).exists()


def test_returned_and_timed_out_free_the_slot_at_once_and_late_work_never_counts(pro, paired_run):
    batch = pro.publish(draft(paired_run))
    capacity = sum(h.capacity for h in batch.hits.all())
    returned = pro.take(batch, "ret")
    timed = pro.take(batch, "late")
    assert returned.hit_id != timed.hit_id
    pro.standin.return_submission(pro.sessions["ret"])
    pro.standin.time_out(pro.sessions["late"])
    assert batch_sync(batch=batch) == 2
    assert batch_sync(batch=batch) == 0  # seen again: nothing more
    for a in (returned, timed):
        a.refresh_from_db()
        assert a.state == AssignmentState.ABANDONED
    # The timed-out participant posts anyway: refused, nothing counts.
    late = pro.browsers["late"].post(f"/prolific/assignment/{timed.pk}/", answers_for(timed))
    assert late.status_code == 409
    assert not Assignment.objects.filter(counted(), pk=timed.pk).exists()
    # Every slot can still be filled by others, and never more than every slot.
    done = 0
    for n in range(capacity + 3):
        a = pro.take(batch, f"p{n}")
        if a is None:
            continue
        pro.submit(a, answers_for(a))
        done += 1
    assert done == capacity
    assert Assignment.objects.filter(counted(), hit__batch=batch).count() == capacity
    for hit in batch.hits.all():
        assert hit.assignments.filter(counted()).count() <= hit.capacity


def test_webhooks_are_signed_fresh_and_applied_once(pro, paired_run, client):
    batch = pro.publish(draft(paired_run))
    a = pro.take(batch, "hooked")
    sid = pro.sessions["hooked"]
    payload = {
        "event_type": "submission.status.change",
        "resource_id": sid,
        "participant_id": "hooked",
        "status": "RETURNED",
    }
    body, headers = pro.standin.signed_hook(SECRET, payload)
    post = lambda b, h: client.post(  # noqa: E731
        "/prolific/hooks/",
        b,
        content_type="application/json",
        **{f"HTTP_{k.upper().replace('-', '_')}": v for k, v in h.items()},
    )
    assert post(body, {}).status_code == 403  # unsigned
    forged, forged_headers = pro.standin.signed_hook("not-the-secret", payload)
    assert post(forged, forged_headers).status_code == 403
    stale, stale_headers = pro.standin.signed_hook(
        SECRET, payload, timestamp=int(time.time()) - 3600
    )
    assert post(stale, stale_headers).status_code == 403
    a.refresh_from_db()
    assert a.state == AssignmentState.ACCEPTED  # nothing refused changed anything
    first = post(body, headers)
    assert first.status_code == 200 and first.json() == {"changed": True}
    again = post(body, headers)  # Prolific's retry, or a replay
    assert again.json() == {"changed": False}
    a.refresh_from_db()
    assert a.state == AssignmentState.ABANDONED
    assert Event.objects.filter(action="assignment.abandoned", assignment=a).count() == 1
    # A status this code does not know is kept, never dropped.
    other = pro.take(batch, "odd")
    odd, odd_headers = pro.standin.signed_hook(
        SECRET,
        {
            **payload,
            "resource_id": pro.sessions["odd"],
            "participant_id": "odd",
            "status": "ON HOLD",
        },
    )
    assert post(odd, odd_headers).json() == {"changed": False}
    assert Event.objects.filter(action="prolific.status_unknown", data__status="ON HOLD").exists()
    other.refresh_from_db()
    assert other.state == AssignmentState.ACCEPTED


def test_the_client_honours_429_and_pages_through_lists(settings):
    standin = ProlificStandIn()
    sleeps: list[float] = []
    api = "https://api.prolific.test/api/v1/"
    client = ProlificClient(
        token="t", base_url=api, session=standin_session(standin, api), sleep=sleeps.append
    )
    standin.throttle(2)
    assert client.call("GET", "users/me/")["id"] == "researcher-1"
    assert sleeps == [0.0, 0.0]  # Retry-After: 0, twice
    standin.throttle(10)
    with pytest.raises(ProlificError, match="gave up after 5 attempts"):
        client.call("GET", "users/me/")
    # Not retried: a call that must never be made twice.
    standin.throttle(1)
    with pytest.raises(ProlificError) as caught:
        client.call("POST", "bulk-bonus-payments/x/pay/", retry=False)
    assert caught.value.status == 429
    study = standin.new_id("st")
    standin.studies[study] = {
        "id": study,
        "status": "ACTIVE",
        "total_available_places": 9,
        "completion_codes": [],
    }
    for n in range(5):
        standin.start(study, f"pp{n}")
    listed = list(client.pages("submissions/", params={"study": study}, page_size=2))
    assert sorted(s["participant_id"] for s in listed) == [f"pp{n}" for n in range(5)]
    assert standin.calls.count(("GET", "submissions/")) == 3


def test_review_through_the_api_with_category_and_message_length(pro, paired_run):
    batch = pro.publish(draft(paired_run))
    a = pro.take(batch, "good")
    pro.submit(a, answers_for(a))
    b = pro.take(batch, "poor")
    pro.submit(b, answers_for(b))
    a.refresh_from_db()
    b.refresh_from_db()
    assignment_approve(assignment=a)
    assert pro.standin.submissions[pro.sessions["good"]]["status"] == "APPROVED"
    with pytest.raises(InputError, match="at least 100 characters"):
        assignment_reject(assignment=b, feedback="LOW_EFFORT: too short")
    assignment_reject(assignment=b, feedback=LONG)
    sub = pro.standin.submissions[pro.sessions["poor"]]
    assert sub["status"] == "REJECTED"
    b.refresh_from_db()
    assert b.state == AssignmentState.REJECTED and b.hit.status == HitStatus.OPEN


@pytest.mark.parametrize("crash", ["create", "record", "pay_lost", "before_pay"])
def test_a_bonus_is_never_paid_twice_whatever_step_crashes(pro, paired_run, crash, monkeypatch):
    batch = pro.publish(draft(paired_run))
    a = pro.take(batch, "bonused")
    pro.submit(a, answers_for(a))
    a.refresh_from_db()
    real = pro.client.call
    from annotation.crowd.prolific import bonuses

    def failing(method, path, **kwargs):
        if crash == "create" and path == "submissions/bonus-payments/":
            raise ProlificError("connection reset", operation=path)
        if crash == "pay_lost" and path.endswith("/pay/"):
            real(method, path, **kwargs)  # Prolific pays; the answer is lost
            raise ProlificError("read timed out", operation=path)
        if crash == "before_pay" and path.endswith("/pay/"):
            raise RuntimeError("the worker died before the call left")
        return real(method, path, **kwargs)

    pro.client.call = failing
    if crash == "record":
        original = bonuses.event_record

        def die_after_create(**kwargs):
            if kwargs["action"] == "prolific.bonus_pay_requested":
                raise RuntimeError("the worker died after the set-up")
            return original(**kwargs)

        monkeypatch.setattr(bonuses, "event_record", die_after_create)
    with pytest.raises((ProlificError, RuntimeError)):
        worker_bonus(assignment=a, amount="0.50", reason="Careful work")
    pro.client.call = real
    monkeypatch.undo()
    if crash == "before_pay":
        # The pay request was recorded but never left: asking again could pay twice, so the
        # retry refuses and says what to check; nothing was paid.
        with pytest.raises(ServiceError, match="would pay twice"):
            worker_bonus(assignment=a, amount="0.50", reason="Careful work")
        assert pro.standin.payments == []
        return
    bonus = worker_bonus(assignment=a, amount="0.50", reason="Careful work")
    assert bonus.sent_at is not None
    assert len(pro.standin.payments) == 1
    assert pro.standin.submissions[pro.sessions["bonused"]]["bonus_payments"] == [50]
    assert Bonus.objects.filter(assignment=a).count() == 1
    worker_bonus(assignment=a, amount="0.50", reason="Careful work")  # and again: nothing
    assert len(pro.standin.payments) == 1


def test_blocks_are_a_participant_group_every_study_excludes(pro, paired_run):
    batch = pro.publish(draft(paired_run))
    a = pro.take(batch, "spam")
    pro.submit(a, answers_for(a))
    worker_block(worker=a.worker, reason="spam")
    from annotation.models import BlockQualification

    group = BlockQualification.objects.get(provider="prolific").qualification_id
    assert "spam" in pro.standin.groups[group]
    study = pro.standin.studies[batch.provider_hit_type_id]
    blocklist = [f for f in study["filters"] if f["filter_id"] == "participant_group_blocklist"]
    assert group in blocklist[0]["selected_values"]
    with pytest.raises(InputError, match="project"):
        worker_block(
            worker=Worker.objects.create(provider="prolific", external_id="x"),
            reason="r",
            scope="account",
        )


def test_expiry_stops_the_study_and_more_places_raise_it(pro, paired_run):
    batch = pro.publish(draft(paired_run))
    study = pro.standin.studies[batch.provider_hit_type_id]
    before = study["total_available_places"]
    from annotation.services.batch_extension import hit_add_assignments

    hit = batch.hits.first()
    hit_add_assignments(hit=hit, count=2)
    hit_add_assignments(hit=Batch.objects.get(pk=batch.pk).hits.first(), count=1)
    assert study["total_available_places"] == before + 3
    batch_expire(batch=batch)
    assert study["status"] == "COMPLETED"
    assert pro.take(batch, "after") is None


def test_a_bison_run_end_to_end_on_prolific(pro, paired_run, client):
    """Stage 2 on Prolific: participants arrive, one returns, one times out, the rest submit;
    sync by webhook and by polling; approve, reject, bonus; stage 3's study keeps stage 2's
    participants out (disjoint pools)."""
    selection = pro.publish(draft(paired_run, limit=4))
    gone = pro.take(selection, "leaver")
    slow = pro.take(selection, "sleeper")
    pro.standin.return_submission(pro.sessions["leaver"])
    body, headers = pro.standin.signed_hook(
        SECRET,
        {
            "event_type": "submission.status.change",
            "resource_id": pro.sessions["leaver"],
            "participant_id": "leaver",
            "status": "RETURNED",
        },
    )
    client.post(
        "/prolific/hooks/",
        body,
        content_type="application/json",
        **{f"HTTP_{k.upper().replace('-', '_')}": v for k, v in headers.items()},
    )
    gone.refresh_from_db()
    assert gone.state == AssignmentState.ABANDONED  # by webhook, at once
    pro.standin.time_out(pro.sessions["sleeper"])
    batch_sync(batch=selection)  # by polling: the time-out frees its HIT
    slow.refresh_from_db()
    assert slow.state == AssignmentState.ABANDONED
    workers = []
    while True:
        a = pro.take(selection, f"sel{len(workers)}")
        if a is None:
            break
        pro.submit(a, {f"q{q.position}": "none" for q in a.hit.questions.all()})
        workers.append(a)
    assert all(h.status == HitStatus.COMPLETE for h in selection.hits.all())
    first, second = workers[0], workers[1]
    for w in (first, second):
        w.refresh_from_db()
    assignment_approve(assignment=first)
    assignment_reject(assignment=second, feedback=LONG)
    worker_bonus(assignment=first, amount="0.30", reason="Careful work")
    assert pro.standin.submissions[pro.sessions[first.worker.external_id]]["status"] == "APPROVED"
    assert pro.standin.submissions[pro.sessions[second.worker.external_id]]["status"] == "REJECTED"
    assert len(pro.standin.payments) == 1
    batch_sync(batch=selection)  # pools granted from counted work
    pool2 = PoolQualification.objects.get(run=paired_run, stage=BisonStage.SELECTION)
    members = pro.standin.groups[pool2.qualification_id]
    assert first.worker.external_id in members and "leaver" not in members
    # Stage 3 (the other pairs' captions selected by a simulated crowd): its study excludes
    # the stage-2 pool.
    selection_done_factory(paired_run)
    verification = batch_create(
        run=paired_run, stage=BisonStage.VERIFICATION, provider="prolific", items_per_hit=100
    )
    pro.publish(verification)
    study3 = pro.standin.studies[Batch.objects.get(pk=verification.pk).provider_hit_type_id]
    blocked = [f for f in study3["filters"] if f["filter_id"] == "participant_group_blocklist"]
    assert pool2.qualification_id in blocked[0]["selected_values"]


def test_the_launch_page_and_the_api_publish_a_prolific_batch(
    pro, paired_run, admin_client, django_capture_on_commit_callbacks
):
    batch = draft(paired_run)
    page = admin_client.get(f"/batches/{batch.pk}/").content.decode()
    assert 'id="fees"' in page and "Prolific fees" not in page  # the fee row is the platform's
    assert 'id="requirements"' in page and "approval_rate: at least 97" in page
    assert "median completion time" in page and "desktop only" in page
    assert 'id="refusal"' not in page
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(f"/api/batches/{batch.pk}/publish/")
    assert response.status_code == 202, response.content
    assert response.json()["job"]["name"] == "prolific.publish"
    batch.refresh_from_db()
    assert batch.status == BatchStatus.PUBLISHED
    assert pro.standin.studies[batch.provider_hit_type_id]["status"] == "ACTIVE"


def test_a_full_study_needs_a_pilot_whose_median_time_sets_the_pay(pro, dataset, run_on_commit):
    from annotation.crowd.prolific.spend import PILOT_PLACES
    from tests.factories import paired_run_factory

    run = paired_run_factory(dataset, run_on_commit=run_on_commit)
    full = batch_create(
        run=run, stage=BisonStage.SELECTION, provider="prolific", items_per_hit=1, limit=2
    )
    full.hits.update(extra_assignments=PILOT_PLACES)  # more places than a pilot's
    with pytest.raises(ServiceError, match="before a pilot"):
        batch_publish(batch=full)
    assert not pro.standin.studies
    pilot = pro.publish(
        batch_create(
            run=run, stage=BisonStage.SELECTION, provider="prolific", items_per_hit=1, limit=3
        )
    )
    pilot.hits.update(extra_assignments=1)  # 3 HITs x 2 places: 6 participants at most
    from annotation.crowd.prolific.studies import study_places_raise

    study_places_raise(batch=pilot, client=pro.client)
    for n in range(5):
        a = pro.take(pilot, f"pilot{n}")
        pro.submit(a, answers_for(a))
    assert pro.publish(full).status == BatchStatus.PUBLISHED


def test_awaiting_review_sets_prolifics_deadline_and_the_review_page_asks_a_category(
    pro, paired_run, admin_client
):
    from annotation.models import Review

    batch = pro.publish(draft(paired_run))
    a = pro.take(batch, "reviewed")
    pro.submit(a, answers_for(a))
    batch_sync(batch=batch)
    a.refresh_from_db()
    assert a.auto_approve_at is not None
    assert (a.auto_approve_at - a.submitted_at).days == 21
    review = Review.objects.create(assignment=a, reasons=[{"position": 0}])
    page = admin_client.get(f"/review/{review.pk}/").content.decode()
    assert 'id="category"' in page and "LOW_EFFORT" in page and 'minlength="100"' in page
    assert "Prolific pays this work on its own" in page
    short = admin_client.post(
        f"/review/{review.pk}/",
        {"decision": "reject", "category": "LOW_EFFORT", "feedback": "too short"},
    )
    assert short.status_code == 400 and "at least 100 characters" in short.content.decode()
    done = admin_client.post(
        f"/review/{review.pk}/",
        {"decision": "reject", "category": "FAILED_CHECK", "feedback": LONG.split(": ", 1)[1]},
    )
    assert done.status_code == 302
    sub = pro.standin.submissions[pro.sessions["reviewed"]]
    assert sub["status"] == "REJECTED"


def test_participant_ids_never_reach_an_export_or_its_datasheet(pro, paired_run, run_on_commit):
    from pathlib import Path

    from annotation.flows.bison.services.export import bison_export_start

    selection_done_factory(paired_run)
    verification = pro.publish(
        batch_create(
            run=paired_run, stage=BisonStage.VERIFICATION, provider="prolific", items_per_hit=100
        )
    )
    ids = []
    while True:
        pid = f"5f{len(ids):022x}"  # Prolific's ids look like this
        a = pro.take(verification, pid)
        if a is None:
            break
        ids.append(pid)
        right = {
            f"q{q.position}": ("right" if q.swapped else "left") for q in a.hit.questions.all()
        }
        pro.submit(a, right)
    assert len(ids) >= 2
    job = run_on_commit(bison_export_start, run=paired_run)
    job.refresh_from_db()
    assert job.state == "succeeded", job.error
    folder = Path(Export.objects.get(pk=job.result["export"]).path)
    folder = folder if folder.is_dir() else folder.parent
    text = "".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file())
    assert "DATASHEET" in " ".join(p.name for p in folder.iterdir())
    assert not [pid for pid in ids if pid in text]
    assert not [s for s in pro.sessions.values() if s in text]


def test_reconciliation_compares_every_submission_and_the_money(pro, paired_run, admin_client):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    from annotation.crowd.prolific.reconcile import prolific_reconcile

    batch = pro.publish(draft(paired_run))
    a = pro.take(batch, "paid")
    pro.submit(a, answers_for(a))
    a.refresh_from_db()
    assignment_approve(assignment=a)
    worker_bonus(assignment=a, amount="0.40", reason="Careful work")
    report = prolific_reconcile(client=pro.client)
    [row] = report.rows
    assert row.matches, row
    assert row.rewards_there == row.rewards_here == batch.reward
    assert row.bonuses_there == row.bonuses_here == Decimal("0.40")
    call_command("prolific_reconcile")  # exits 0 when everything matches
    # Someone completes at Prolific with the code but no work here; a status changes there.
    intruder = pro.standin.start(batch.provider_hit_type_id, "intruder")
    pro.standin.complete(intruder, studies.completion_code(batch, studies.COMPLETED))
    pro.standin.submissions[pro.sessions["paid"]]["status"] = "REJECTED"
    report = prolific_reconcile(client=pro.client)
    [row] = report.rows
    assert row.no_work_here == [intruder]
    assert row.disagree == [
        {"submission": pro.sessions["paid"], "here": "approved", "there": "REJECTED"}
    ]
    with pytest.raises(CommandError, match="differ"):
        call_command("prolific_reconcile")
    page = admin_client.post("/prolific/reconcile/").content.decode()
    assert intruder in page and "differs" in page


def test_the_dashboard_links_each_providers_staff_pages(admin_client):
    page = admin_client.get("/").content.decode()
    assert 'href="/prolific/reconcile/"' in page and 'href="/mturk/reconcile/"' in page


def test_work_counts_only_once_synchronisation_sees_the_submission_completed(pro, paired_run):
    batch = pro.publish(draft(paired_run))
    a = pro.take(batch, "counted")
    assert not a.confirmed  # a claim holds its HIT, unconfirmed
    browser = pro.browsers["counted"]
    response = browser.post(f"/prolific/assignment/{a.pk}/", answers_for(a))
    assert response.status_code == 302
    a.refresh_from_db()
    assert a.state == AssignmentState.SUBMITTED and not a.confirmed
    assert not Assignment.objects.filter(counted(), pk=a.pk).exists()
    with pytest.raises(ServiceError, match="not confirmed"):
        assignment_approve(assignment=a)
    # Still ACTIVE at Prolific (the participant never reached the completion URL): nothing.
    assert batch_sync(batch=batch) == 0
    pro.complete_at_prolific("counted", response["Location"])
    assert batch_sync(batch=batch) == 1
    assert Assignment.objects.filter(counted(), pk=a.pk).exists()
