"""ECCV Caption keeps the original COCO pairs among its positives; so does our export."""

import json

import pytest

from annotation.flows.eccv.selectors import eccv_exclusions, eccv_positives
from annotation.flows.eccv.services.runs import eccv_run_create
from annotation.models import Caption, Run
from annotation.services.datasets.datasets import dataset_import

pytestmark = pytest.mark.django_db


@pytest.fixture
def eccv_subset(reference_data):
    i2t = json.loads((reference_data / "eccv" / "eccv_image_to_caption.subset.json").read_text())
    t2i = json.loads((reference_data / "eccv" / "eccv_caption_to_image.subset.json").read_text())
    return (
        {int(k): set(v) for k, v in i2t.items()},
        {int(k): set(v) for k, v in t2i.items()},
    )


@pytest.fixture
def run_on_eccv_queries(sample_path, eccv_subset):
    """A run on the bundled sample whose queries are the published subset's queries."""
    i2t, t2i = eccv_subset
    dataset = dataset_import(path=sample_path).dataset
    run = eccv_run_create(dataset=dataset, config={"image_queries": 5, "caption_queries": 5})
    run.config.update(query_images=sorted(i2t), query_captions=sorted(t2i))
    Run.objects.filter(pk=run.pk).update(config=run.config)
    return run


def coco_links(positives):
    return {
        tuple(int(x) for x in key.split(":"))
        for key, sources in positives["sources"].items()
        if "coco" in sources
    }


def test_coco_positives_are_the_original_pairs_minus_the_exclusions(run_on_eccv_queries):
    run = run_on_eccv_queries
    bad_captions, bad_images = eccv_exclusions(run=run)
    positives = eccv_positives(run=run)
    originals = {
        (image, caption)
        for image, caption in Caption.objects.filter(dataset=run.dataset).values_list(
            "image__coco_id", "coco_id"
        )
        if image in set(run.config["query_images"]) or caption in set(run.config["query_captions"])
    }
    kept = {(i, c) for i, c in originals if i not in bad_images and c not in bad_captions}
    assert kept and len(kept) < len(originals)  # the sample's queries include excluded captions
    exported = {(int(i), c) for i, cs in positives["i2t"].items() for c in cs} | {
        (i, int(c)) for c, images in positives["t2i"].items() for i in images
    }
    assert exported == kept  # nothing judged yet: the originals are the only positives
    assert coco_links(positives) == originals  # provenance kept before the exclusions


def test_coco_positives_are_a_subset_of_eccv_captions_positives(run_on_eccv_queries, eccv_subset):
    i2t, t2i = eccv_subset
    positives = eccv_positives(run=run_on_eccv_queries)
    assert positives["i2t"] and positives["t2i"]
    for image, captions in positives["i2t"].items():
        assert set(captions) <= i2t[image]
    for caption, images in positives["t2i"].items():
        assert set(images) <= t2i[caption]
    # Every query keeps a positive, so none is dropped from evaluation.
    assert positives["queries_without_positives"]["i2t"] == 0
    assert positives["queries_without_positives"]["t2i"] == 0


def test_the_coco_source_can_be_switched_off_and_queries_without_positives_are_listed(
    run_on_eccv_queries,
):
    run = run_on_eccv_queries
    run.config["original_positives"] = False
    Run.objects.filter(pk=run.pk).update(config=run.config)
    positives = eccv_positives(run=run)
    assert not coco_links(positives) and not positives["i2t"]
    missing = positives["queries_without_positives"]
    bad_captions, bad_images = eccv_exclusions(run=run)
    expected_images = [q for q in run.config["query_images"] if q not in bad_images]
    assert missing["i2t"] == len(expected_images) and missing["i2t_ids"] == expected_images
