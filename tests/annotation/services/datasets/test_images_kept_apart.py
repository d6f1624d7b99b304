"""Which batches keep a worker off HITs showing an image they saw (`images_kept_apart`): an
image-disjoint stage (BISON's stage 3) unless relaxed for a trusted pool; never a stage whose
HITs have no `HitImage` rows, where the claim then leaves the rule's subquery out."""

import pytest

from annotation.flows.bison.vocabulary import BisonStage
from annotation.services.datasets.images import images_kept_apart
from annotation.tasktypes.base import RELAX_IMAGES
from tests.annotation.selectors.runs.test_batch_reach import stage3
from tests.factories import selection_done_factory

pytestmark = pytest.mark.django_db


def test_only_an_image_disjoint_stage_keeps_images_apart(paired_run):
    selection = selection_done_factory(paired_run)
    assert selection.stage == BisonStage.SELECTION
    assert not selection.hits.filter(shown_images__isnull=False).exists()  # nothing to read
    assert not images_kept_apart(selection)
    # Asking a stage without the rule to relax it changes nothing.
    selection.options = {RELAX_IMAGES.name: False}
    assert not images_kept_apart(selection)
    kept = stage3(paired_run)
    assert kept.hits.filter(shown_images__isnull=False).exists()
    assert images_kept_apart(kept)
    kept.options = {RELAX_IMAGES.name: True}  # a trusted pool's batch (`stage3(relax=True)`)
    assert not images_kept_apart(kept)
