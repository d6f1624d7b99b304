"""CROWDVL_ECCV_EMBEDDING_STORAGE: how a proposal part holds imported embeddings."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.flows.eccv.services.annotators import eccv_annotator_add
from annotation.flows.eccv.services.embeddings import annotator_embeddings
from annotation.flows.eccv.services.rankings import annotator_ranking
from annotation.models import Caption
from pipeline.errors import InputError

pytestmark = pytest.mark.django_db


def _embeddings_annotator(eccv_run, tmp_path):
    images = np.asarray(list(eccv_run.dataset.images.values_list("coco_id", flat=True)))
    captions = np.asarray(
        list(Caption.objects.filter(dataset=eccv_run.dataset).values_list("coco_id", flat=True))
    )
    rng = np.random.default_rng(0)
    path = tmp_path / "model.npz"
    np.savez(
        path,
        image_ids=images,
        image_embeddings=rng.standard_normal((images.size, 16)).astype(np.float32),
        caption_ids=captions,
        caption_embeddings=rng.standard_normal((captions.size, 16)).astype(np.float32),
    )
    return eccv_annotator_add(run=eccv_run, name="imported", kind="embeddings", source=str(path))


def test_float16_setting_keeps_half_precision_and_the_same_rankings(eccv_run, tmp_path, settings):
    annotator = _embeddings_annotator(eccv_run, tmp_path)
    assert annotator_embeddings(annotator=annotator).caption_embeddings.dtype == np.float32
    single = annotator_ranking(annotator=annotator)
    settings.CROWDVL_ECCV_EMBEDDING_STORAGE = "float16"
    assert annotator_embeddings(annotator=annotator).caption_embeddings.dtype == np.float16
    # A toy gallery of well-separated random vectors: half precision ranks it the same.
    half = annotator_ranking(annotator=annotator)
    assert half.i2t == single.i2t and half.t2i == single.t2i


def test_unknown_storage_setting_is_named(eccv_run, tmp_path, settings):
    annotator = _embeddings_annotator(eccv_run, tmp_path)
    settings.CROWDVL_ECCV_EMBEDDING_STORAGE = "half"
    with pytest.raises(InputError) as info:
        annotator_embeddings(annotator=annotator)
    assert info.value.field == "CROWDVL_ECCV_EMBEDDING_STORAGE"
