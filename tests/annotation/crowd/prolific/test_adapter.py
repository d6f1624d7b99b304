"""Prolific as the paid crowd (issue 24), against the stateful stand-in of its API
(`tests/annotation/crowd/prolific/standin.py`): nothing reaches the network."""

import time
from decimal import Decimal

import pytest
from django.test import Client

from annotation.crowd.prolific import studies
from annotation.crowd.prolific.client import ProlificClient, ProlificError
from annotation.crowd.prolific.fees import minor_units
from annotation.crowd.prolific.publish import prolific_publish_start
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
from annotation.services.runs.batches import batch_create, batch_expire, batch_publish, batch_sync
from annotation.services.work.decisions import assignment_approve, assignment_reject
from annotation.services.work.worker_actions import worker_block, worker_bonus
from pipeline.errors import InputError
from tests.annotation.crowd.prolific.player import SECRET
from tests.annotation.crowd.prolific.standin import ProlificStandIn, standin_session
from tests.factories import selection_done_factory

pytestmark = pytest.mark.django_db

LONG = (
    "LOW_EFFORT: the same caption was chosen for every pair, including pairs where it plainly "
    "describes the other image; please read the instructions."
)


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
    # Countries as the choice ids of Prolific's filter list, not names (crowd/prolific/test_filters.py).
    [country] = [
        f for f in pro.standin.filter_list if f["filter_id"] == "current-country-of-residence"
    ]
    uk = next(cid for cid, label in country["choices"].items() if label == "United Kingdom")
    assert uk in filters["current-country-of-residence"]["selected_values"]
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
    alice, mallory, bob = (pro.standin.participant() for _ in range(3))
    sid = pro.standin.start(study, alice)
    browser = Client()
    # Another study's id, or ids not of Prolific's shape (24 hex): refused before anything is
    # asked or written.
    for pid, study_id, session in (
        (alice, pro.standin.new_id(), sid),
        ("alice", study, sid),
        (alice, study, sid.upper()),
        (alice, study, sid + "0"),
    ):
        bad = browser.get(
            f"/prolific/study/{batch.pk}/",
            {"PROLIFIC_PID": pid, "STUDY_ID": study_id, "SESSION_ID": session},
        )
        assert bad.status_code == 400
    # Mallory claims Alice's session: Prolific says it is Alice's.
    page = browser.get(
        f"/prolific/study/{batch.pk}/",
        {"PROLIFIC_PID": mallory, "STUDY_ID": study, "SESSION_ID": sid},
    )
    assert page.status_code == 200 and b"consent" in page.content
    assert mallory.encode() not in page.content  # the page never echoes the participant id
    version = page.content.split(b'name="version" value="')[1].split(b'"')[0].decode()
    refused = browser.post(f"/prolific/study/{batch.pk}/", {"version": version})
    assert refused.status_code == 403
    # A session Prolific does not know at all.
    browser.get(
        f"/prolific/study/{batch.pk}/",
        {"PROLIFIC_PID": bob, "STUDY_ID": study, "SESSION_ID": pro.standin.new_id()},
    )
    refused = browser.post(f"/prolific/study/{batch.pk}/", {"version": version})
    assert refused.status_code == 403 and b"does not know" in refused.content
    assert not Worker.objects.filter(provider="prolific").exists()
    assert not Assignment.objects.filter(hit__batch=batch).exists()


def test_declining_consent_returns_the_participant_with_the_no_consent_code(pro, paired_run):
    batch = pro.publish(draft(paired_run))
    pro.arrive(batch, "carol")
    browser = pro.browsers[pro.pid("carol")]
    page = browser.get(
        f"/prolific/study/{batch.pk}/",
        {
            "PROLIFIC_PID": pro.pid("carol"),
            "STUDY_ID": batch.provider_hit_type_id,
            "SESSION_ID": pro.session("carol"),
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
    pro.standin.return_submission(pro.session("ret"))
    pro.standin.time_out(pro.session("late"))
    assert batch_sync(batch=batch) == 2
    assert batch_sync(batch=batch) == 0  # seen again: nothing more
    for a in (returned, timed):
        a.refresh_from_db()
        assert a.state == AssignmentState.ABANDONED
    # The timed-out participant posts anyway: refused, nothing counts.
    late = pro.browsers[pro.pid("late")].post(
        f"/prolific/assignment/{timed.pk}/", answers_for(timed)
    )
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
    sid = pro.session("hooked")
    payload = {
        "event_type": "submission.status.change",
        "resource_id": sid,
        "participant_id": pro.pid("hooked"),
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
            "resource_id": pro.session("odd"),
            "participant_id": pro.pid("odd"),
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
    assert client.call("GET", "users/me/")["id"] == standin.researcher
    assert sleeps == [0.0, 0.0]  # Retry-After: 0, twice
    standin.throttle(10)
    with pytest.raises(ProlificError) as caught:
        client.call("GET", "users/me/")
    assert caught.value.status == 429 and len(sleeps) == 2 + 4  # five attempts in all
    standin.throttle(0)
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
    assert pro.standin.submissions[pro.session("good")]["status"] == "APPROVED"
    with pytest.raises(InputError, match="at least 100 characters"):
        assignment_reject(assignment=b, feedback="LOW_EFFORT: too short")
    assignment_reject(assignment=b, feedback=LONG)
    sub = pro.standin.submissions[pro.session("poor")]
    assert sub["status"] == "REJECTED"
    b.refresh_from_db()
    assert b.state == AssignmentState.REJECTED and b.hit.status == HitStatus.OPEN


@pytest.mark.parametrize(
    "crash", ["create_lost", "create_refused", "after_setup", "pay_lost", "pay_502", "before_pay"]
)
def test_a_bonus_is_never_paid_twice_whatever_step_crashes(pro, paired_run, crash, monkeypatch):
    batch = pro.publish(draft(paired_run))
    a = pro.take(batch, "bonused")
    pro.submit(a, answers_for(a))
    a.refresh_from_db()
    from annotation.crowd.prolific import bonuses
    from annotation.services.jobs import remote_calls

    if crash == "create_lost":  # the set-up is made at Prolific, its answer lost
        pro.standin.lose("POST", "submissions/bonus-payments/")
    if crash == "create_refused":
        pro.standin.fail("POST", "submissions/bonus-payments/", status=400, why="bad csv")
    if crash == "pay_lost":  # Prolific pays; the connection drops before the answer
        pro.standin.lose("POST", r"bulk-bonus-payments/[0-9a-f]{24}/pay/")
    if crash == "pay_502":  # Prolific pays; a gateway error comes back instead
        pro.standin.lose("POST", r"bulk-bonus-payments/[0-9a-f]{24}/pay/", status=502)
    real_row = remote_calls.remote_call_row

    def dying_row(**kwargs):
        if crash == "after_setup" and kwargs["operation"] == "bonus.pay":
            raise RuntimeError("the worker died after the set-up")
        return real_row(**kwargs)

    def dying_record(**kwargs):
        if kwargs["action"] == "prolific.bonus_pay_requested":
            raise RuntimeError("the worker died before the call left")
        return None

    monkeypatch.setattr(remote_calls, "remote_call_row", dying_row)
    if crash == "before_pay":
        monkeypatch.setattr(bonuses, "event_record", dying_record)
    if crash in ("pay_lost", "pay_502"):
        # The payment is looked up at once and found: done, without a second payment.
        worker_bonus(assignment=a, amount="0.50", reason="Careful work")
    else:
        with pytest.raises((ServiceError, RuntimeError)):
            worker_bonus(assignment=a, amount="0.50", reason="Careful work")
    monkeypatch.undo()
    calls = len(pro.standin.calls)
    if crash == "before_pay":
        # The pay request was recorded but never left: sending it again could pay twice, so
        # the next attempt refuses and says what to check; nothing was paid or sent.
        with pytest.raises(ServiceError, match="could do it twice"):
            worker_bonus(assignment=a, amount="0.50", reason="Careful work")
        assert pro.standin.payments == []
        assert not [c for c in pro.standin.calls[calls:] if c[0] == "POST"]
        return
    if crash not in ("pay_lost", "pay_502"):
        bonus = worker_bonus(assignment=a, amount="0.50", reason="Careful work")
        assert bonus.sent_at is not None
    assert len(pro.standin.payments) == 1
    assert pro.standin.submissions[pro.session("bonused")]["bonus_payments"] == [50]
    assert Bonus.objects.filter(assignment=a).count() == 1
    assert Bonus.objects.get(assignment=a).sent_at is not None
    worker_bonus(assignment=a, amount="0.50", reason="Careful work")  # and again: nothing
    assert len(pro.standin.payments) == 1
    pays = [c for c in pro.standin.calls if c[1].endswith("/pay/")]
    assert len(pays) == 1  # never sent twice


def test_blocks_are_a_participant_group_every_study_excludes(pro, paired_run):
    batch = pro.publish(draft(paired_run))
    a = pro.take(batch, "spam")
    pro.submit(a, answers_for(a))
    worker_block(worker=a.worker, reason="spam")
    from annotation.models import BlockQualification

    group = BlockQualification.objects.get(provider="prolific").qualification_id
    assert pro.pid("spam") in pro.standin.groups[group]
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
    from annotation.services.money.batch_extension import hit_add_assignments

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
    pro.standin.return_submission(pro.session("leaver"))
    body, headers = pro.standin.signed_hook(
        SECRET,
        {
            "event_type": "submission.status.change",
            "resource_id": pro.session("leaver"),
            "participant_id": pro.pid("leaver"),
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
    pro.standin.time_out(pro.session("sleeper"))
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
    assert first.worker.external_id in members and pro.pid("leaver") not in members
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
    assert 'id="requirements"' in page and "Approval Rate: at least 97" in page
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
    sub = pro.standin.submissions[pro.session("reviewed")]
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
        a = pro.take(verification, f"v{len(ids)}")
        pid = pro.pid(f"v{len(ids)}")
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
    intruder = pro.standin.start(batch.provider_hit_type_id, pro.standin.participant())
    pro.standin.complete(intruder, studies.completion_code(batch, studies.COMPLETED))
    pro.standin.submissions[pro.session("paid")]["status"] = "REJECTED"
    report = prolific_reconcile(client=pro.client)
    [row] = report.rows
    assert row.no_work_here == [intruder]
    assert row.disagree == [
        {"submission": pro.session("paid"), "here": "approved", "there": "REJECTED"}
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
    browser = pro.browsers[pro.pid("counted")]
    response = browser.post(f"/prolific/assignment/{a.pk}/", answers_for(a))
    assert response.status_code == 302
    a.refresh_from_db()
    assert a.state == AssignmentState.SUBMITTED and not a.confirmed
    assert not Assignment.objects.filter(counted(), pk=a.pk).exists()
    with pytest.raises(ServiceError, match="not confirmed"):
        assignment_approve(assignment=a)
    # Still ACTIVE at Prolific (the participant never reached the completion URL): nothing.
    assert batch_sync(batch=batch) == 0
    pro.complete_at_prolific(pro.pid("counted"), response["Location"])
    assert batch_sync(batch=batch) == 1
    assert Assignment.objects.filter(counted(), pk=a.pk).exists()


def _other_studies(pro, count):
    """Studies of other labs' batches in the workspace, so a look-up must page past the first."""
    for n in range(count):
        sid = pro.standin.new_id()
        pro.standin.studies[sid] = {
            "id": sid,
            "name": f"other {n}",
            "internal_name": f"someone-else-{n}",
            "status": "COMPLETED",
            "total_available_places": 1,
            "reward": 100,
            "completion_codes": [],
        }


def test_lost_answers_while_publishing_make_one_study_and_one_group_of_each(pro, paired_run):
    """Each creating call takes effect and its answer is lost (a dropped connection, a 502):
    the study and every group are looked up (past the first page) instead of made twice."""
    _other_studies(pro, 45)
    pro.standin.lose("POST", "participant-groups/")
    pro.standin.lose("POST", "participant-groups/", status=502)
    pro.standin.lose("POST", "studies/", status=502)
    batch = pro.publish(draft(paired_run))
    assert batch.status == BatchStatus.PUBLISHED
    mine = [s for s in pro.standin.studies.values() if s["internal_name"].startswith("crowdvl-")]
    assert len(mine) == 1 and batch.provider_hit_type_id == mine[0]["id"]
    assert pro.standin.calls.count(("POST", "studies/")) == 1
    names = [g["name"] for g in pro.standin.group_info.values()]
    assert len(names) == len(set(names)) == pro.standin.calls.count(("POST", "participant-groups/"))
    blocklist = next(
        f for f in mine[0]["filters"] if f["filter_id"] == "participant_group_blocklist"
    )
    assert set(blocklist["selected_values"]) <= set(pro.standin.groups)


def test_a_create_that_did_not_take_effect_is_sent_once_more_only_after_a_look_up(pro, paired_run):
    """A 502 before Prolific acted: unclear, so nothing is sent again at once; the next attempt
    looks the study up, finds none, and creates it."""
    from annotation.errors import RemoteUnclear
    from annotation.models import RemoteCall

    batch = draft(paired_run)
    pro.standin.fail("POST", "studies/", status=502, why="bad gateway")
    with pytest.raises(RemoteUnclear, match="may have taken effect"):
        batch_publish(batch=batch)
    assert pro.standin.calls.count(("POST", "studies/")) == 1 and not pro.standin.studies
    assert RemoteCall.objects.get(operation="study.create").state == "unclear"
    batch.refresh_from_db()
    assert batch.status == BatchStatus.DRAFT
    batch_publish(batch=batch)
    assert len(pro.standin.studies) == 1
    assert pro.standin.calls.count(("POST", "studies/")) == 2
    assert pro.standin.calls.count(("GET", "studies/")) >= 2  # looked up before each send


def test_the_client_never_sends_a_post_or_patch_twice_by_itself(settings):
    from annotation.crowd.prolific.client import ProlificUnclear

    api = "https://api.prolific.test/api/v1/"
    standin = ProlificStandIn(base_url=api)
    sleeps = []
    client = ProlificClient(
        token="t", base_url=api, session=standin_session(standin, api), sleep=sleeps.append
    )
    body = {"workspace_id": standin.workspace, "name": "g"}
    standin.fail("POST", "participant-groups/", status=503)
    with pytest.raises(ProlificUnclear):
        client.call("POST", "participant-groups/", json=body)
    standin.lose("POST", "participant-groups/")
    with pytest.raises(ProlificUnclear, match="no answer"):
        client.call("POST", "participant-groups/", json=body)
    assert standin.calls.count(("POST", "participant-groups/")) == 2 and sleeps == []
    assert len(standin.groups) == 1  # the lost one took effect; nothing was sent again
    # A 429 means Prolific did not act: waited for and sent again, whatever the method.
    standin.throttle(1)
    created = client.call("POST", "participant-groups/", json=body)
    assert len(created["id"]) == 24 and sleeps == [0.0]
    # Reading is safe to repeat: a dropped GET is sent again.
    standin.lose("GET", "users/me/")
    assert client.call("GET", "users/me/")["id"] == standin.researcher


def test_an_unexpected_error_ends_the_publish_job_failed_and_recovery_leaves_it(
    pro, paired_run, monkeypatch, admin_client
):
    from annotation.crowd.prolific import publish, tasks
    from annotation.models import Job
    from annotation.services.jobs.job_recovery import jobs_recover

    batch = draft(paired_run)
    job = prolific_publish_start(batch=batch, provider=pro.provider)

    def broken(**kwargs):
        raise KeyError("id")  # e.g. an answer without the field the reference promises

    monkeypatch.setattr(publish, "study_create_once", broken)
    with pytest.raises(KeyError):
        tasks.prolific_publish(job.pk)
    job = Job.objects.get(pk=job.pk)
    assert job.state == "failed" and "KeyError" in job.error
    assert jobs_recover(stall_seconds=0) == []  # never re-sent: it may have acted outside
    page = admin_client.get("/").content.decode()
    assert "KeyError" in page
    assert pro.standin.calls.count(("POST", "participant-groups/")) == len(pro.standin.groups)


def test_an_unreadable_cost_is_a_difference_not_agreement(pro, paired_run, monkeypatch):
    from annotation.crowd.prolific.reconcile import prolific_reconcile

    batch = pro.publish(draft(paired_run))
    a = pro.take(batch, "paid")
    pro.submit(a, answers_for(a))
    a.refresh_from_db()
    assignment_approve(assignment=a)
    monkeypatch.setattr(
        pro.standin, "_study_cost", lambda params, body, sid: (200, {"rewards": {}}, {})
    )
    [row] = prolific_reconcile(client=pro.client).rows
    assert row.money_unread and not row.matches


def test_the_sync_command_puts_counted_participants_in_their_pool_group(pro, paired_run):
    from django.core.management import call_command

    batch = pro.publish(draft(paired_run))
    a = pro.take(batch, "pooled")
    browser = pro.browsers[pro.pid("pooled")]
    done = browser.post(f"/prolific/assignment/{a.pk}/", answers_for(a))
    pro.complete_at_prolific(pro.pid("pooled"), done["Location"])
    call_command("prolific_sync", "--batch", str(batch.pk))
    pool = PoolQualification.objects.get(run=paired_run, stage=BisonStage.SELECTION)
    assert pro.pid("pooled") in pro.standin.groups[pool.qualification_id]
