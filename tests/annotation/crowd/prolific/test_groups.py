"""Prolific's participant groups (annotation/crowd/prolific/groups.py), against the stand-in of its API (tests/annotation/crowd/prolific/standin.py): blocks are a
group every study excludes."""

import pytest

from annotation.models import Worker
from annotation.services.work.worker_actions import worker_block
from pipeline.errors import InputError
from tests.annotation.crowd.prolific.test_provider import answers_for, draft

pytestmark = pytest.mark.django_db


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
