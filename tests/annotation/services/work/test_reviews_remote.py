"""Invariants of a remote crowd provider (one that keeps its own copy of the HITs): seeing the
same remote answer again changes nothing, a HIT the provider forgot does not stop a
reconciliation, and a rejection is reversed only within the provider's window, counted as the
provider counts it. Each test runs once per remote provider's driver
(tests/annotation/drivers.py); MTurk's calls are checked by botocore's Stubber."""

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from annotation.errors import ServiceError
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Assignment, AssignmentState, Event, Review, ReviewStatus
from annotation.services.runs.batches import batch_create
from annotation.services.work.reviews import review_decide, review_reverse
from tests.annotation.api.test_schema import check, schema  # noqa: F401
from tests.annotation.drivers import MTurkDriver

pytestmark = pytest.mark.django_db

# A remote provider's name and the driver that plays its remote side in tests.
REMOTE_DRIVERS = {"mturk": MTurkDriver}


@pytest.fixture(params=sorted(REMOTE_DRIVERS))
def remote(request, client, settings):
    settings.CROWDVL_PUBLIC_URL = "https://crowd.example.org"
    driver = REMOTE_DRIVERS[request.param](client)
    yield driver
    driver.done()


def draft(remote, run, **options):
    return batch_create(
        run=run,
        stage=BisonStage.SELECTION,
        provider=remote.name,
        items_per_hit=2,
        reward="0.50",
        **options,
    )


@pytest.fixture
def published(remote, paired_run):
    return remote.publish(draft(remote, paired_run))


def answers_for(assignment):
    return {f"q{q.position}": "none" for q in assignment.hit.questions.all()}


def events_since(pk):
    return list(Event.objects.filter(pk__gt=pk).order_by("pk").values_list("action", flat=True))


def last_event():
    return Event.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


# --- synchronisation is idempotent -----------------------------------------------------------


@pytest.mark.parametrize("reached_us", [True, False], ids=["posted-here", "remote-only"])
@pytest.mark.parametrize("decision", [AssignmentState.REJECTED, AssignmentState.APPROVED])
def test_a_decision_seen_again_writes_no_event_and_counts_no_change(
    remote, published, decision, reached_us
):
    """Work the provider decided on its own (before we confirmed it, or whose answers reached
    only the provider) is recorded by the first synchronisation; later ones that list the same
    answer record nothing but their own summary and count no change."""
    taken = remote.take(published, "W1")
    remote.submit_unsynced(taken, answers_for(taken), reached_us=reached_us)
    remote.decide_remotely(taken, decision)
    # Counted work joins the stage's pool at the provider on its first synchronisation.
    first = remote.sync(published, granted=("W1",) if decision == AssignmentState.APPROVED else ())
    assert first > 0
    local = Assignment.objects.get(provider_assignment_id=taken.provider_assignment_id)
    assert local.state == decision
    recorded = Event.objects.filter(assignment=local).count()
    for _ in range(2):
        before = last_event()
        assert remote.sync(published) == 0
        assert events_since(before) == [remote.synced_event]
    assert Assignment.objects.get(pk=local.pk).state == decision
    assert Event.objects.filter(assignment=local).count() == recorded


@pytest.mark.parametrize("decision", [AssignmentState.REJECTED, AssignmentState.APPROVED])
def test_a_decision_on_confirmed_work_is_recorded_once(remote, published, decision):
    """Confirmed work the provider then decided (its auto-approval, its console)."""
    taken = remote.take(published, "W1")
    remote.submit(taken, answers_for(taken))
    remote.decide_remotely(taken, decision)
    before = last_event()
    assert remote.sync(published) == 1
    assert f"assignment.{decision}" in events_since(before)
    for _ in range(2):
        before = last_event()
        assert remote.sync(published) == 0
        assert events_since(before) == [remote.synced_event]
    assert Assignment.objects.get(pk=taken.pk).state == decision


# --- reconciliation reports a HIT the provider no longer knows --------------------------------


def test_reconciliation_reports_hits_the_provider_no_longer_knows_and_goes_on(
    remote,
    paired_run,
    admin_client,
    schema,  # noqa: F811
):
    """A HIT the provider deleted (or disposed of) refuses its lists: it is reported as gone,
    with the rest of its batch and every later batch still compared."""
    first = remote.publish(draft(remote, paired_run, limit=4))
    second = remote.publish(draft(remote, paired_run))
    taken = remote.take(second, "W1")
    remote.submit(taken, answers_for(taken))
    remote.decide_remotely(taken, AssignmentState.APPROVED)
    remote.sync(second)
    hits = list(first.hits.order_by("position"))
    assert len(hits) >= 2
    # One HIT refuses its assignments, another (deleted meanwhile) its bonuses.
    gone = {hits[0].pk: "assignments", hits[1].pk: "bonuses"}

    remote.expect_reconcile([first, second], gone=gone)
    report = remote.reconcile()
    assert [h.pk for h in report.gone] == list(gone)
    assert [row.batch.pk for row in report.batches] == [first.pk, second.pk]
    later = report.batches[1]
    assert later.local.approved == later.remote.approved == 1 and later.matches

    # The command lists them (and exits 1: records and the provider differ).
    remote.expect_reconcile([first, second], gone=gone)
    out = io.StringIO()
    with pytest.raises(CommandError, match="differ"):
        call_command(f"{remote.name}_reconcile", stdout=out)
    for hit in hits[:2]:
        assert f"HIT {hit.pk} ({hit.provider_hit_id}) is no longer known" in out.getvalue()

    # The page shows them.
    remote.expect_reconcile([first, second], gone=gone)
    page = admin_client.post(f"/{remote.name}/reconcile/")
    assert page.status_code == 200, page.content
    shown = page.content.decode()
    assert 'id="gone-remote"' in shown and 'id="reconcile-batches"' in shown
    section = shown.split('id="gone-remote"', 1)[1].split("</ul>", 1)[0]
    assert all(h.provider_hit_id in section for h in hits[:2])
    known = [*hits[2:], *second.hits.all()]
    assert known and not any(h.provider_hit_id in section for h in known)

    # The API, in its documented shape.
    remote.expect_reconcile([first, second], gone=gone)
    response = admin_client.post(
        f"/api/{remote.name}/reconcile/", {}, content_type="application/json"
    )
    assert response.status_code == 200, response.json()
    check(schema, f"/api/{remote.name}/reconcile/", "post", response)
    body = response.json()
    assert body["gone"] == list(gone)
    assert [r["batch"] for r in body["batches"]] == [first.pk, second.pk]


# --- a rejection is reversed within the provider's window, counted from the submission -------


def rejected_review(remote, batch, name, *, submitted_ago, rejected_ago):
    """`name`'s work, held for review and rejected; its submission and the rejection dated
    back as asked."""
    assignment = remote.take(batch, name)
    remote.submit(assignment, answers_for(assignment))
    review = Review.objects.create(assignment=assignment, reasons=[{"position": 0}])
    remote.expect_reject(assignment, "Looked random.")
    review_decide(review=review, approve=False, feedback="Looked random.")
    now = timezone.now()
    Assignment.objects.filter(pk=assignment.pk).update(submitted_at=now - submitted_ago)
    Event.objects.filter(
        assignment=assignment, action__in=("assignment.rejected", "review.decided")
    ).update(created_at=now - rejected_ago)
    Review.objects.filter(pk=review.pk).update(decided_at=now - rejected_ago)
    assignment.refresh_from_db()
    review.refresh_from_db()
    return assignment, review


def test_a_rejection_is_reversed_only_within_the_providers_window_from_submission(
    remote,
    published,
    admin_client,
    schema,  # noqa: F811
):
    window = remote.reversal_window  # the provider's own rule, e.g. MTurk's 30 days
    day = timedelta(days=1)
    # Submitted just inside the window and rejected today: reversible until window's end.
    recent, recent_review = rejected_review(
        remote, published, "W1", submitted_ago=window - day, rejected_ago=timedelta(0)
    )
    # Submitted just past the window, rejected only two days ago: the window counts from the
    # submission, so it is closed.
    late, late_review = rejected_review(
        remote, published, "W2", submitted_ago=window + day, rejected_ago=2 * day
    )

    page = admin_client.get(f"/review/{late_review.pk}/").content.decode()
    assert 'id="reverse"' not in page and 'id="reversal-closed"' in page
    with pytest.raises(ServiceError, match="submitted on"):
        review_reverse(review=late_review, feedback="Your appeal was right.")
    refused = admin_client.post(
        f"/review/{late_review.pk}/", {"decision": "reverse", "feedback": "Your appeal was right."}
    )
    assert refused.status_code == 400 and "submitted on" in refused.content.decode()
    response = admin_client.post(
        f"/api/reviews/{late_review.pk}/reverse/",
        {"feedback": "Your appeal was right."},
        content_type="application/json",
    )
    assert response.status_code == 409 and "submitted on" in response.json()["error"]
    check(schema, "/api/reviews/{review_id}/reverse/", "post", response)
    late.refresh_from_db()
    assert late.state == AssignmentState.REJECTED
    assert Review.objects.get(pk=late_review.pk).status == ReviewStatus.REJECTED

    page = admin_client.get(f"/review/{recent_review.pk}/").content.decode()
    assert 'id="reverse"' in page and 'id="reversal-closed"' not in page
    assert f"{recent.submitted_at + window:%Y-%m-%d}" in page  # the last day it is offered
    remote.expect_reversal(recent, "Your appeal was right.")
    response = admin_client.post(
        f"/api/reviews/{recent_review.pk}/reverse/",
        {"feedback": "Your appeal was right."},
        content_type="application/json",
    )
    assert response.status_code == 200, response.json()
    recent.refresh_from_db()
    assert recent.state == AssignmentState.APPROVED
    # The window is the provider's declared property.
    assert remote.provider.reversal_window == window
