"""A run's status follows its batches (issue 27): once every batch of the run has ended
(completed or expired) it says the stage's work is done ("collected", "collected_2": BISON's
"selected", "verified"), and it goes back to "collecting"/"collecting_2" when work is on offer
again: a reopened HIT, an extended batch, a new batch. Every flow, through the same core
services."""

import pytest

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.flows.bison.vocabulary import BisonStage
from annotation.flows.cxc.services.sampling import cxc_run_create
from annotation.flows.cxc.vocabulary import CxcStage
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.flows.quality.vocabulary import QualityStage
from annotation.models import Event, Hit, HitStatus, Run, RunStatus
from annotation.services.money.batch_extension import batch_extend
from annotation.services.runs.batches import batch_create, batch_expire, batch_publish
from annotation.services.work.recount import hit_recount
from pipeline.simulate import WorkerProfile
from tests.annotation.flows.cxc.test_cxc_flow import SMALL, sampled
from tests.annotation.services.runs.test_gold import quality_run  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db

CAREFUL = WorkerProfile(accuracy=1.0, seconds_per_answer=20.0)


def _status(run: Run) -> str:
    run.refresh_from_db()
    return run.status


def _published(run: Run, stage: str, **kwargs):  # type: ignore[no-untyped-def]
    return batch_publish(batch=batch_create(run=run, stage=stage, provider="simulated", **kwargs))


def _answered(run: Run, stage: str, **kwargs):  # type: ignore[no-untyped-def]
    batch = _published(run, stage, **kwargs)
    simulate_crowd(batch=batch, workers=6, profile=CAREFUL)
    batch.refresh_from_db()
    assert batch.status == "completed"
    return batch


def test_bison_says_selected_then_verified_when_every_batch_ended(paired_run):
    first = _published(paired_run, BisonStage.SELECTION, limit=4)
    second = _published(paired_run, BisonStage.SELECTION)
    assert _status(paired_run) == RunStatus.COLLECTING
    simulate_crowd(batch=first, workers=3, profile=CAREFUL)
    assert _status(paired_run) == RunStatus.COLLECTING  # the second batch is still on offer
    simulate_crowd(batch=second, workers=3, profile=CAREFUL)
    assert _status(paired_run) == RunStatus.COLLECTED
    event = Event.objects.filter(action="run.status").latest("pk")
    assert event.data == {
        "from": "collecting",
        "to": "collected",
        "batch": second.pk,
        "batch_status": "completed",
    }
    third = _published(paired_run, BisonStage.VERIFICATION, assignments_per_hit=2)
    assert _status(paired_run) == RunStatus.COLLECTING_2
    simulate_crowd(batch=third, workers=4, profile=CAREFUL)
    assert _status(paired_run) == RunStatus.COLLECTED_2


def test_a_reopened_hit_or_an_extended_batch_puts_the_run_back_to_work(paired_run):
    batch = _answered(paired_run, BisonStage.SELECTION)
    assert _status(paired_run) == RunStatus.COLLECTED
    hit = batch.hits.first()
    # Its work stopped counting (a rejection): the HIT, the batch and the run reopen.
    hit.assignments.update(excluded=True)
    hit_recount(hit=Hit.objects.get(pk=hit.pk))
    assert _status(paired_run) == RunStatus.COLLECTING
    batch_expire(batch=batch)
    assert _status(paired_run) == RunStatus.COLLECTED  # ended: expired counts as done
    batch_extend(batch=batch, seconds=3600)
    assert Hit.objects.get(pk=hit.pk).status == HitStatus.OPEN
    assert _status(paired_run) == RunStatus.COLLECTING


def test_a_paused_batch_is_still_on_offer_and_other_statuses_stay(paired_run):
    from annotation.services.runs.batches import batch_pause

    paused = batch_pause(batch=_published(paired_run, BisonStage.SELECTION, limit=4))
    _answered(paired_run, BisonStage.SELECTION)
    assert _status(paired_run) == RunStatus.COLLECTING  # the paused batch may still take work
    Run.objects.filter(pk=paired_run.pk).update(status=RunStatus.EXPORTED)
    batch_expire(batch=paused)
    assert _status(paired_run) == RunStatus.EXPORTED  # an export is the run's own news


def test_eccv_says_verified_when_its_round_ended(proposed):
    _answered(proposed, EccvStage.JUDGMENT, options={"direction": "i2t"})
    assert _status(proposed) == RunStatus.COLLECTED
    batch = _published(proposed, EccvStage.JUDGMENT, options={"direction": "t2i"})
    assert _status(proposed) == RunStatus.COLLECTING
    batch_expire(batch=batch)
    assert _status(proposed) == RunStatus.COLLECTED


def test_cxc_says_verified_when_its_batches_ended(dataset, run_on_commit):
    run = cxc_run_create(dataset=dataset, config=SMALL)
    assert sampled(run, run_on_commit).state == "succeeded"
    _answered(run, CxcStage.SIS)
    assert _status(run) == RunStatus.COLLECTED


def test_caption_quality_says_verified_when_its_batches_ended(quality_run):  # noqa: F811
    _answered(quality_run, QualityStage.BINARY)
    assert _status(quality_run) == RunStatus.COLLECTED
