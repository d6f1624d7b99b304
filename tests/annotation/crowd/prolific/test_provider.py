"""Prolific as the paid crowd (issue 24), against the stateful stand-in of its API
(`tests/annotation/crowd/prolific/standin.py`): nothing reaches the network. Here the adapter's
whole path (annotation/crowd/prolific/provider.py): a BISON run end to end, reviews through the
API, no participant id in an export, the dashboard's links; its publishing, studies, pages,
synchronisation, client, reconciliation, bonuses, groups and hooks are tested beside their
modules (test_publish.py, test_studies.py, test_views.py, test_sync.py, test_client.py,
test_reconcile.py, test_bonuses.py, test_groups.py, test_hooks_signing.py)."""

import pytest

from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import AssignmentState, Batch, Export, HitStatus, PoolQualification
from annotation.services.runs.batches import batch_create, batch_sync
from annotation.services.work.decisions import assignment_approve, assignment_reject
from annotation.services.work.worker_actions import worker_bonus
from pipeline.errors import InputError
from tests.annotation.crowd.prolific.player import SECRET
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


def test_the_dashboard_links_each_providers_staff_pages(admin_client):
    page = admin_client.get("/").content.decode()
    assert 'href="/prolific/reconcile/"' in page and 'href="/mturk/reconcile/"' in page
