"""Local workers are the holders of invitation links: no typed id, no look-alike id, no
squatting, no late work over a HIT's capacity (issue 8, part 3)."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from annotation.crowd.local.invitations import (
    invitation_consent,
    invitation_revoke,
    invitations_create,
    labels_from,
)
from annotation.errors import PoolConflict, ServiceError, TooLate
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import (
    Answer,
    Assignment,
    AssignmentState,
    Event,
    Invitation,
    PoolMembership,
    Worker,
)
from annotation.selectors.counting import counted
from annotation.selectors.work.invitations import consent_summary, run_consent
from annotation.services.runs.batches import batch_create, batch_expire, batch_publish
from annotation.services.work.claim import assignment_claim_next
from annotation.services.work.slots import first_claim_seconds
from annotation.services.work.submit import assignment_submit
from annotation.services.work.worker_identity import worker_get_or_create, worker_id_normalise
from pipeline.errors import InputError
from tests.factories import invited, join, selection_done_factory

pytestmark = pytest.mark.django_db


def stage2(run, **kwargs):
    kwargs.setdefault("items_per_hit", 1)
    return batch_publish(
        batch=batch_create(run=run, stage=BisonStage.SELECTION, provider="local", **kwargs)
    )


def answers_for(assignment):
    return {f"q{q.position}": "none" for q in assignment.hit.questions.all()}


def test_typing_an_id_makes_no_one_a_worker(client, paired_run):
    batch = stage2(paired_run)
    # The old start form: a posted id is refused and creates nothing.
    assert client.post(f"/work/{batch.pk}/", {"worker_id": "alice"}).status_code == 405
    assert client.get(f"/work/{batch.pk}/").status_code == 403
    assert client.get(f"/work/{batch.pk}/next/").status_code == 403
    assert not Worker.objects.exists() and not Assignment.objects.exists()
    # A session pointing at a real worker without a valid invitation is no one either.
    alice = worker_get_or_create(provider="local", external_id="alice")
    session = client.session
    session["crowdvl_worker"] = alice.pk
    session.save()
    assert client.get(f"/work/{batch.pk}/next/").status_code == 403
    assert not Assignment.objects.exists()


def test_an_invitation_shows_the_consent_text_first_and_records_its_version(client, paired_run):
    batch = stage2(paired_run)
    invitation = invitations_create(run=paired_run, labels=["alice@example.org"])[0]
    page = client.get(f"/join/{invitation.token}/").content.decode()
    assert "research study" in page and run_consent(paired_run)["version"] in page
    # Not in yet: nothing to work on before consenting.
    assert client.get(f"/work/{batch.pk}/next/").status_code == 403
    stale = client.post(f"/join/{invitation.token}/", {"version": "0" * 12})
    assert stale.status_code == 400 and "changed" in stale.content.decode()
    invitation.refresh_from_db()
    assert invitation.consent_version == "" and invitation.consented_at is None

    version = run_consent(paired_run)["version"]
    page = client.post(f"/join/{invitation.token}/", {"version": version}).content.decode()
    assert f'href="/work/{batch.pk}/"' in page
    invitation.refresh_from_db()
    assert invitation.consent_version == version and invitation.consented_at is not None
    assert Event.objects.filter(action="invitation.consented", worker=invitation.worker).exists()
    assert client.get(f"/work/{batch.pk}/next/").status_code == 302

    # A new text is a new version: the worker reads and accepts it again before going on.
    paired_run.config["consent"] = "A new information sheet."
    paired_run.save()
    again = client.get(f"/work/{batch.pk}/next/")  # their link's page asks for it
    assert again.status_code == 302 and again["Location"] == f"/join/{invitation.token}/"
    assert "A new information sheet." in client.get(f"/join/{invitation.token}/").content.decode()
    record = consent_summary(paired_run)
    assert record["text"] == "A new information sheet." and record["version"] != version
    assert record["invited"] == 1 and record["accepted_by_version"] == {version: 1}


def test_a_revoked_link_stops_at_once_and_the_work_stays(client, paired_run):
    batch = stage2(paired_run)
    worker = join(client, paired_run, "alice")
    done = assignment_claim_next(batch=batch, worker=worker)
    assignment_submit(assignment_id=done.pk, worker=worker, answers=answers_for(done))
    response = client.get(f"/work/{batch.pk}/next/")
    assert response.status_code == 302
    open_url = response["Location"]
    invitation = Invitation.objects.get(worker=worker)
    invitation_revoke(invitation=invitation)
    assert client.get(f"/join/{invitation.token}/").status_code == 404
    assert client.get(f"/work/{batch.pk}/next/").status_code == 403
    assert client.get(open_url).status_code == 404  # the open session too
    done.refresh_from_db()
    assert done.state == AssignmentState.SUBMITTED and Answer.objects.filter(assignment=done)


def test_an_open_assignment_is_only_ever_its_holders(client, paired_run):
    from django.test import Client

    batch = stage2(paired_run)
    join(client, paired_run, "alice")
    url = client.get(f"/work/{batch.pk}/next/")["Location"]
    mallory = Client()
    join(mallory, paired_run, "mallory")
    assert mallory.get(url).status_code == 404
    assert mallory.post(url, {"q0": "none"}).status_code == 404
    # Staff are not workers: a logged-in admin cannot open it either.
    from django.contrib.auth.models import User

    admin = User.objects.create_superuser("staff", "staff@example.org", "pw")
    staff = Client()
    staff.force_login(admin)
    assert staff.get(url).status_code == 404
    assert not Answer.objects.exists()


@pytest.mark.parametrize(
    "variant",
    ["Alice", "ALICE", "alice\u200b", "\u200balice", "al\u00adice", "ａｌｉｃｅ", " alice \ufeff"],
)
def test_look_alike_ids_are_one_worker(paired_run, variant):
    assert worker_id_normalise(variant, provider="local") == "alice"
    first = invitations_create(run=paired_run, labels=["alice"])[0]
    again = invitations_create(run=paired_run, labels=[variant])[0]
    assert again.pk == first.pk and Worker.objects.count() == 1
    # So the disjoint pools hold: alice in stage 2 cannot verify as a look-alike.
    selection_done_factory(paired_run)
    stage3 = batch_publish(
        batch=batch_create(run=paired_run, stage=BisonStage.VERIFICATION, provider="local")
    )
    PoolMembership.objects.create(run=paired_run, worker=first.worker, stage=BisonStage.SELECTION)
    with pytest.raises(PoolConflict):
        assignment_claim_next(
            batch=stage3, worker=worker_get_or_create(provider="local", external_id=variant)
        )


def test_mturk_ids_keep_their_case_but_lose_invisible_characters():
    assert worker_id_normalise("A1B2C3\u200b", provider="mturk") == "A1B2C3"


def test_squatters_cannot_starve_a_batch(paired_run):
    batch = stage2(paired_run)
    hits = batch.hits.count()
    t0 = timezone.now()
    squatters = [invited(paired_run, f"squatter-{i}").worker for i in range(hits)]
    held = [assignment_claim_next(batch=batch, worker=w, now=t0) for w in squatters]
    assert all(held) and len({a.hit_id for a in held}) == hits
    # One open assignment per worker and batch: claiming again returns the same one.
    assert assignment_claim_next(batch=batch, worker=squatters[0], now=t0).pk == held[0].pk
    real = invited(paired_run, "real").worker
    assert assignment_claim_next(batch=batch, worker=real, now=t0 + timedelta(minutes=1)) is None
    # A worker with nothing submitted holds a HIT only for the short first-claim time.
    hold = first_claim_seconds(batch)
    assert hold < batch.assignment_duration_seconds
    later = t0 + timedelta(seconds=hold + 1)
    mine = assignment_claim_next(batch=batch, worker=real, now=later)
    assert mine is not None
    # A worker who has submitted keeps the full assignment duration for the next claim.
    assignment_submit(
        assignment_id=mine.pk, worker=real, answers=answers_for(mine), submitted_at=later
    )
    second = assignment_claim_next(batch=batch, worker=real, now=later)
    assert second is not None
    still = later + timedelta(seconds=hold + 1)
    others = [invited(paired_run, f"other-{i}").worker for i in range(hits)]
    taken = [assignment_claim_next(batch=batch, worker=w, now=still) for w in others]
    assert second.hit_id not in {a.hit_id for a in taken if a}


def test_late_work_is_refused_and_never_overfills_a_hit(client, paired_run):
    batch = stage2(paired_run)
    t0 = timezone.now()
    slow = join(client, paired_run, "slow")
    claim = assignment_claim_next(batch=batch, worker=slow, now=t0)
    hold = first_claim_seconds(batch)
    # Past the first-claim hold, another worker took the slot and submitted.
    quick = invited(paired_run, "quick").worker
    later = t0 + timedelta(seconds=hold + 5)
    taken = assignment_claim_next(batch=batch, worker=quick, now=later)
    assert taken.hit_id == claim.hit_id
    assignment_submit(
        assignment_id=taken.pk, worker=quick, answers=answers_for(taken), submitted_at=later
    )
    with pytest.raises(TooLate, match="all the answers it needs"):
        assignment_submit(
            assignment_id=claim.pk, worker=slow, answers=answers_for(claim), submitted_at=later
        )
    assert claim.hit.assignments.filter(counted()).count() == claim.hit.capacity == 1
    assert not Answer.objects.filter(assignment=claim).exists()
    # Through the page, a clear message and a way on, not the form again.
    response = client.post(f"/work/assignment/{claim.pk}/", answers_for(claim))
    assert response.status_code == 409
    page = response.content.decode()
    assert "all the answers it needs" in page and f"/work/{batch.pk}/next/" in page


def test_a_first_claim_past_its_hold_is_taken_while_its_slot_is_free(paired_run):
    batch = stage2(paired_run)
    t0 = timezone.now()
    worker = invited(paired_run, "slow").worker
    claim = assignment_claim_next(batch=batch, worker=worker, now=t0)
    later = t0 + timedelta(seconds=first_claim_seconds(batch) + 60)
    assignment_submit(
        assignment_id=claim.pk, worker=worker, answers=answers_for(claim), submitted_at=later
    )
    claim.refresh_from_db()
    assert claim.state == AssignmentState.SUBMITTED


def test_work_after_the_assignment_duration_or_the_batch_is_refused(paired_run):
    batch = stage2(paired_run, assignment_duration_seconds=600)
    t0 = timezone.now()
    worker = invited(paired_run, "late").worker
    claim = assignment_claim_next(batch=batch, worker=worker, now=t0)
    with pytest.raises(TooLate, match="ran out"):
        assignment_submit(
            assignment_id=claim.pk,
            worker=worker,
            answers=answers_for(claim),
            submitted_at=t0 + timedelta(seconds=601),
        )
    other = invited(paired_run, "other").worker
    open_claim = assignment_claim_next(batch=batch, worker=other, now=t0)
    batch_expire(batch=batch)
    with pytest.raises(TooLate, match="expired"):
        assignment_submit(
            assignment_id=open_claim.pk, worker=other, answers=answers_for(open_claim)
        )
    assert not Answer.objects.exists()


def test_a_batch_past_its_lifetime_takes_no_claims_and_no_work(paired_run):
    batch = stage2(paired_run, lifetime_seconds=3600)
    worker = invited(paired_run, "w").worker
    t0 = timezone.now()
    claim = assignment_claim_next(batch=batch, worker=worker, now=t0)
    after = t0 + timedelta(hours=2)
    other = invited(paired_run, "x").worker
    assert assignment_claim_next(batch=batch, worker=other, now=after) is None
    with pytest.raises(TooLate, match="expired"):
        assignment_submit(
            assignment_id=claim.pk, worker=worker, answers=answers_for(claim), submitted_at=after
        )


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"first_claim_seconds": 5}, "options.first_claim_seconds"),
        ({"first_claim_seconds": 7200}, "options.first_claim_seconds"),
        ({"first_claim_seconds": "600"}, "options.first_claim_seconds"),
    ],
)
def test_first_claim_hold_is_checked_at_batch_creation(paired_run, options, field):
    with pytest.raises(InputError) as caught:
        batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="local", options=options)
    assert caught.value.field == field
    assert not paired_run.batches.exists()


def test_staff_invite_in_bulk_download_and_revoke(admin_client, paired_run):
    page = admin_client.get(f"/runs/{paired_run.pk}/invitations/")
    assert page.status_code == 200
    response = admin_client.post(
        f"/runs/{paired_run.pk}/invitations/",
        {"labels": "email\nann@example.org\nBob@Example.org\nbob@example.org\u200b\n"},
    )
    assert response.status_code == 302
    assert sorted(Invitation.objects.values_list("label", flat=True)) == [
        "Bob@Example.org",
        "ann@example.org",
    ]
    body = admin_client.get(f"/runs/{paired_run.pk}/invitations.csv").content.decode()
    lines = body.strip().splitlines()
    assert lines[0].startswith("label,link") and len(lines) == 3
    token = Invitation.objects.get(label="ann@example.org").token
    assert f"/join/{token}/" in body
    invitation = Invitation.objects.get(label="ann@example.org")
    admin_client.post(f"/invitations/{invitation.pk}/revoke/")
    invitation.refresh_from_db()
    assert invitation.revoked_at is not None
    # Not for workers or anonymous visitors.
    from django.test import Client

    assert Client().get(f"/runs/{paired_run.pk}/invitations.csv").status_code == 302


def test_invite_command_reads_a_csv_and_revokes(paired_run, tmp_path, capsys):
    sheet = tmp_path / "people.csv"
    sheet.write_text("email,name\nann@example.org,Ann\ncarl@example.org,Carl\n")
    call_command("invite_workers", str(paired_run.pk), "dora", "--csv", str(sheet))
    out = capsys.readouterr().out.splitlines()
    assert out[0].strip() == "label,link" and len(out) == 4
    assert all("/join/" in line for line in out[1:])
    call_command("invite_workers", str(paired_run.pk), "--revoke", "DORA")
    assert Invitation.objects.get(label="dora").revoked_at is not None
    with pytest.raises(CommandError, match="no invitation for nobody"):
        call_command("invite_workers", str(paired_run.pk), "--revoke", "nobody")
    with pytest.raises(CommandError, match="missing.csv"):
        call_command("invite_workers", str(paired_run.pk), "--csv", str(tmp_path / "missing.csv"))
    with pytest.raises(CommandError, match="no run 999999"):
        call_command("invite_workers", "999999", "x")


def test_labels_are_checked(paired_run):
    assert labels_from("id\nann\n\n bob , x\n") == ["ann", "bob"]
    with pytest.raises(ServiceError, match="no worker to invite"):
        invitations_create(run=paired_run, labels=[" ", ""])
    with pytest.raises(ServiceError, match="at most 100"):
        invitations_create(run=paired_run, labels=["x" * 101])
    assert not Invitation.objects.exists()
    invitation = invitations_create(run=paired_run, labels=["ann"])[0]
    with pytest.raises(ServiceError):
        invitation_consent(invitation=invitation, version="stale")


@pytest.mark.parametrize("text", ["", "too short", 42, "a\x00" * 20, "x" * 20_001])
def test_a_runs_consent_text_is_checked(dataset, text):
    from annotation.services.runs.runs import run_create

    with pytest.raises(InputError) as caught:
        run_create(dataset=dataset, config={"consent": text})
    assert caught.value.field == "consent"
    assert not dataset.runs.exists()


def test_links_that_only_this_machine_can_open_are_flagged(admin_client, paired_run, settings):
    url = f"/runs/{paired_run.pk}/invitations/"
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "lab-pc.example.org"]
    admin_client.post(url, {"labels": "ann"})
    local = admin_client.get(url, HTTP_HOST="127.0.0.1:8000").content.decode()
    assert 'id="loopback"' in local and "http://127.0.0.1:8000/join/" in local
    lab = admin_client.get(url, HTTP_HOST="lab-pc.example.org:8000").content.decode()
    assert 'id="loopback"' not in lab and "http://lab-pc.example.org:8000/join/" in lab
    settings.CROWDVL_PUBLIC_URL, settings.CROWDVL_PUBLIC_URL_SET = "https://crowd.example.org", True
    public = admin_client.get(url, HTTP_HOST="127.0.0.1:8000").content.decode()
    assert 'id="loopback"' not in public and "https://crowd.example.org/join/" in public


def test_a_consent_change_mid_task_loses_nothing_and_asks_again_before_the_next(client, paired_run):
    """Issue 46: the task in progress is submitted under the version the worker accepted;
    the next task needs the new text accepted first."""
    from annotation.models import Answer, Consent
    from annotation.services.runs.run_texts import run_consent_set

    batch = stage2(paired_run)
    invitation = invitations_create(run=paired_run, labels=["alice"])[0]
    old = run_consent(paired_run)["version"]
    client.post(f"/join/{invitation.token}/", {"version": old})
    taken = client.get(f"/work/{batch.pk}/next/")
    assignment = Assignment.objects.get(worker=invitation.worker)
    assert taken["Location"] == f"/work/assignment/{assignment.pk}/"
    run_consent_set(run=paired_run, text="A new information sheet, changed mid-task.")
    answers = {f"q{q.position}": "none" for q in assignment.hit.questions.all()}
    assert client.get(f"/work/assignment/{assignment.pk}/").status_code == 200
    # The answers in progress are still kept as they are given.
    draft = client.post(
        f"/work/assignment/{assignment.pk}/draft/",
        {"answers": {k: [v] for k, v in answers.items()}},
        content_type="application/json",
    )
    assert draft.status_code == 200
    sent = client.post(f"/work/assignment/{assignment.pk}/", answers)
    assert sent.status_code == 302 and sent["Location"] == f"/work/{batch.pk}/next/"
    assignment.refresh_from_db()
    assert assignment.state == AssignmentState.SUBMITTED
    assert Answer.objects.filter(assignment=assignment).count() == len(answers)
    accepted = Consent.objects.get(worker=invitation.worker, run=paired_run)
    assert accepted.version == old and accepted.accepted_at <= assignment.accepted_at
    # The work is recorded as done under the version accepted when it was claimed.
    assert assignment.consent_version == old != run_consent(paired_run)["version"]
    # The next task: the new text first, on their link's page.
    again = client.get(f"/work/{batch.pk}/next/")
    assert again.status_code == 302 and again["Location"] == f"/join/{invitation.token}/"
    assert "changed mid-task" in client.get(f"/join/{invitation.token}/").content.decode()
