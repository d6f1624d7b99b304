"""`annotation/selectors/counting.py`: who may work on a stage (`pool_bar_reason`)."""

import pytest

from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Assignment, PoolMembership
from annotation.selectors.counting import pool_bar_reason
from tests.factories import selection_done_factory

pytestmark = pytest.mark.django_db


def test_confirmed_earlier_stage_work_bars_a_later_stage_without_a_pool_row(paired_run):
    # The pool row is one record of who did what; the confirmed work is another, and bars
    # on its own (a row lost, or work from before pools were recorded).
    selection_done_factory(paired_run)
    done = Assignment.objects.filter(hit__batch__run=paired_run, confirmed=True).first()
    assert done is not None
    worker = done.worker
    PoolMembership.objects.filter(run=paired_run, worker=worker).delete()
    reason = pool_bar_reason(run=paired_run, worker=worker, stage=BisonStage.VERIFICATION)
    assert reason is not None and "submitted work on" in reason
    # The same stage is open to them, and unconfirmed work bars no one (issue 25).
    assert pool_bar_reason(run=paired_run, worker=worker, stage=BisonStage.SELECTION) is None
    Assignment.objects.filter(worker=worker).update(confirmed=False)
    assert pool_bar_reason(run=paired_run, worker=worker, stage=BisonStage.VERIFICATION) is None
