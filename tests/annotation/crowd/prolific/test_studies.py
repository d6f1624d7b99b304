"""A batch's study at Prolific (annotation/crowd/prolific/studies.py), against the stand-in of its API (tests/annotation/crowd/prolific/standin.py): expiry stops it
and more places raise it."""

import pytest

from annotation.models import Batch
from annotation.services.runs.batches import batch_expire
from tests.annotation.crowd.prolific.test_provider import draft

pytestmark = pytest.mark.django_db


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
