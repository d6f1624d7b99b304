"""The state that lived in the event log (issue 49) is carried into its rows by the data
migrations (annotation 0034, crowd_prolific 0002, crowd_panel 0003): built from the schema
before them with the events an installation has, migrated forward, each row holds what the
log said (repeated events make one row); migrated back, the log is untouched."""

import secrets
import string
from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE = [
    ("annotation", "0033_publication"),
    ("crowd_panel", "0002_consent_records"),
    ("crowd_prolific", "0001_initial"),
]


def _migrate(targets):  # type: ignore[no-untyped-def]
    executor = MigrationExecutor(connection)
    if targets is None:
        targets = executor.loader.graph.leaf_nodes()
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


def _mturk_id() -> str:
    return "".join(secrets.choice(string.ascii_uppercase + string.digits) for _ in range(30))


def old_run(old):  # type: ignore[no-untyped-def]
    """A BISON run in the Default project, made with the historical models `old`."""
    model = old.get_model
    dataset = model("annotation", "Dataset").objects.create(
        name="old", source_file="x.json", checksum="0" * 64, image_source="coco_url"
    )
    project = model("annotation", "Project").objects.create(name="Default")
    return model("annotation", "Run").objects.create(
        dataset=dataset, project=project, kind="bison", status="collecting"
    )


def _old_log(old):  # type: ignore[no-untyped-def]
    """A batch with two assignments and the events that held state before the rows."""
    model = old.get_model
    run = old_run(old)
    batch = model("annotation", "Batch").objects.create(
        run=run, stage="selection", provider="mturk", title="old batch"
    )
    hit = model("annotation", "Hit").objects.create(batch=batch, position=0)
    Worker = model("annotation", "Worker")
    one, two = (Worker.objects.create(provider="mturk", external_id=_mturk_id()) for _ in range(2))
    Assignment = model("annotation", "Assignment")
    now = timezone.now()
    first, second = (
        Assignment.objects.create(hit=hit, worker=w, accepted_at=now, state="rejected")
        for w in (one, two)
    )
    Event = model("annotation", "Event")
    log = [
        ("hit.assignments_added", {}, {"hit": hit.pk, "added": 2, "extra_total": 2}),
        ("hit.assignments_added", {}, {"hit": hit.pk, "added": 2, "extra_total": 2}),  # retried
        (
            "hit.assignments_added",
            {"assignment": first},
            {"hit": hit.pk, "added": 1, "redo": first.pk},
        ),
        ("assignment.rejected", {"assignment": first}, {"source": "requester", "feedback": "one"}),
        ("assignment.rejected", {"assignment": first}, {"source": "requester", "feedback": "two"}),
        ("assignment.rejected", {"assignment": second}, {"source": "mturk"}),
        ("worker.notified", {"worker": one}, {"subject": "Thanks", "token": "crowdvl-" + "a" * 48}),
        ("worker.notified", {"worker": one}, {"subject": "Thanks", "token": "crowdvl-" + "a" * 48}),
        ("prolific.work_refused", {"assignment": first}, {"error": "the HIT is full"}),
        ("prolific.work_refused", {"assignment": first}, {"error": "the HIT is full"}),
        ("panel.finished", {"worker": one}, {"outcome": "completed", "stopped": False}),
        ("panel.finished", {"worker": one}, {"outcome": "completed", "stopped": True}),
        ("panel.finished", {"worker": two}, {"outcome": "screened_out", "stopped": True}),
    ]
    refused = _mturk_id()
    for _ in range(2):
        log.append(
            (
                "mturk.answers_refused",
                {},
                {
                    "assignment": refused,
                    "worker": one.external_id,
                    "hit": "H",
                    "status": "Submitted",
                    "error": "bad",
                },
            )
        )
        log.append(
            (
                "prolific.status_unknown",
                {},
                {"submission": "6" * 24, "status": "ON HOLD", "source": "hook"},
            )
        )
    for n, (action, links, data) in enumerate(log):
        event = Event.objects.create(action=action, run=run, batch=batch, data=data, **links)
        # Each event at its own time: a row keeps its first event's (a rejection: its last).
        Event.objects.filter(pk=event.pk).update(created_at=now - timedelta(minutes=60 - n))
    return {
        "hit": hit.pk,
        "batch": batch.pk,
        "first": first.pk,
        "second": second.pk,
        "one": one.pk,
        "two": two.pk,
        "refused": refused,
        "events": Event.objects.count(),
        "first_added_at": now - timedelta(minutes=60),
    }


@pytest.mark.django_db(transaction=True)
def test_state_rows_are_filled_from_the_log_and_the_log_is_kept_both_ways():
    try:
        ids = _old_log(_migrate(BEFORE))
        new = _migrate(None)
        model = new.get_model

        added = model("annotation", "SlotsAdded").objects.order_by("pk")
        assert [(s.hit_id, s.added, s.extra_total, s.redo_id) for s in added] == [
            (ids["hit"], 2, 2, None),
            (ids["hit"], 1, None, ids["first"]),
        ]
        assert added[0].created_at == ids["first_added_at"]
        feedback = model("annotation", "RejectionFeedback").objects
        assert dict(feedback.values_list("assignment_id", "feedback")) == {
            ids["first"]: "two",
            ids["second"]: "",
        }
        (notice,) = model("annotation", "WorkerNotice").objects.all()
        assert (notice.worker_id, notice.state, notice.subject) == (ids["one"], "sent", "Thanks")
        (refused,) = model("annotation", "RefusedAnswers").objects.all()
        assert (refused.batch_id, refused.remote_assignment_id, refused.status) == (
            ids["batch"],
            ids["refused"],
            "Submitted",
        )
        (submission,) = model("crowd_prolific", "RefusedSubmission").objects.all()
        assert submission.assignment_id == ids["first"]
        (unknown,) = model("crowd_prolific", "UnknownStatus").objects.all()
        assert (unknown.submission_id, unknown.status) == ("6" * 24, "ON HOLD")
        finishes = model("crowd_panel", "Finish").objects
        assert sorted(finishes.values_list("worker_id", "outcome", "stopped")) == sorted(
            [(ids["one"], "completed", False), (ids["two"], "screened_out", True)]
        )
        assert model("annotation", "Event").objects.count() == ids["events"]

        old = _migrate(BEFORE)  # back: the rows' tables go, the log is as it was
        with pytest.raises(LookupError):
            old.get_model("annotation", "SlotsAdded")
        assert old.get_model("annotation", "Event").objects.count() == ids["events"]
    finally:
        _migrate(None)
