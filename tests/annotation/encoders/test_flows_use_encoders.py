"""Each of the three flows runs on a tiny CLIP model end to end through the encoder job."""

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import kendalltau

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.encoders import services
from annotation.encoders.models import EmbeddingSet
from annotation.flows.cxc.services.encoder_sampling import cxc_sample_from_encoder
from annotation.flows.cxc.services.sampling import cxc_run_create
from annotation.flows.eccv.models import Proposal
from annotation.flows.eccv.services.encoder_annotators import eccv_encoder_annotator_add
from annotation.flows.eccv.services.proposal_job import eccv_propose_start
from annotation.flows.eccv.services.report import eccv_report
from annotation.flows.quality.services.candidates import (
    quality_candidates_import,
    quality_run_create,
)
from annotation.flows.quality.services.correlate import quality_correlate
from annotation.flows.quality.services.encoder_scores import quality_encoder_scores
from annotation.flows.quality.services.export import quality_export_start
from annotation.flows.quality.vocabulary import QualityStage
from annotation.models import Export, JobState
from annotation.services.runs.batches import batch_create, batch_publish
from pipeline.errors import InputError
from pipeline.flickr8k import load_derived
from pipeline.simulate import WorkerProfile
from tests.annotation.encoders.conftest import SMALL_CXC

pytestmark = pytest.mark.django_db


def _set(run_on_commit, dataset, model="tiny-clip"):
    es = run_on_commit(
        services.embedding_set_start, dataset=dataset, checkpoint=model, model_name=model
    )
    es.refresh_from_db()
    assert es.state == "ready", es.job.error
    return es


def test_eccv_proposes_from_two_image_text_models(eccv_run, import_dir, run_on_commit, settings):
    clip = _set(run_on_commit, eccv_run.dataset)
    siglip = _set(run_on_commit, eccv_run.dataset, model="tiny-siglip")
    a = eccv_encoder_annotator_add(run=eccv_run, embedding_set=clip)
    b = eccv_encoder_annotator_add(run=eccv_run, embedding_set=siglip)
    assert a.name == f"tiny-clip@{clip.checkpoint_sha256[:12]}" and a.kind == "image_text"
    assert a.params["checkpoint_sha256"] == clip.checkpoint_sha256
    job = run_on_commit(eccv_propose_start, run=eccv_run)
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED, job.error
    names = set(
        Proposal.objects.filter(item__run=eccv_run).values_list("annotator__name", flat=True)
    )
    assert names == {a.name, b.name}
    # The query never sees its own caption: a caption query's proposals are images, and an
    # image query's proposed captions never include... its rank lists come from real rows.
    with np.load(Path(settings.MEDIA_ROOT) / clip.file) as f:
        image_rows = {int(i): r for i, r in zip(f["image_ids"], f["image_embeddings"], strict=True)}
        caption_rows = {
            int(c): r for c, r in zip(f["caption_ids"], f["caption_embeddings"], strict=True)
        }
    query = eccv_run.config["query_images"][0]
    scores = {c: float(image_rows[query].astype(np.float64) @ r) for c, r in caption_rows.items()}
    best = max(scores, key=scores.get)
    proposed = Proposal.objects.filter(
        annotator=a, direction="i2t", rank=1, item__positive__coco_id=query
    )
    assert list(proposed.values_list("item__caption__coco_id", flat=True)) == [best]
    report = eccv_report(run=eccv_run)
    assert a.name in json.dumps(report["kendall_tau_b"])


def test_an_unready_set_is_refused(eccv_run, import_dir, run_on_commit):
    clip = _set(run_on_commit, eccv_run.dataset)
    clip.state = "building"
    with pytest.raises(InputError, match="not ready"):
        eccv_encoder_annotator_add(run=eccv_run, embedding_set=clip)


def test_cxc_samples_image_pairs_from_the_encoders_image_embeddings(
    dataset, import_dir, run_on_commit
):
    run = cxc_run_create(
        dataset=dataset,
        config=SMALL_CXC,
    )
    clip = _set(run_on_commit, dataset)
    job = run_on_commit(cxc_sample_from_encoder, run=run, embedding_set=clip)
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED, job.error
    assert job.result["image_embeddings_standin"] is False
    assert clip.label in job.result["image_embeddings"]
    assert job.result["pairs"]["c2c_isim"] == 6


def test_caption_quality_scores_per_caption_into_quality_correlate(
    dataset, import_dir, run_on_commit, tmp_path
):
    run = quality_run_create(dataset=dataset, config={"pairs_per_image": 4})
    images = list(dataset.images.order_by("coco_id"))
    for model, texts in (
        ("good", [i.captions.first().text for i in images]),
        ("bad", ["a red car"] * len(images)),
    ):
        path = tmp_path / f"{model}.json"
        path.write_text(
            json.dumps(
                [{"image_id": i.coco_id, "caption": t} for i, t in zip(images, texts, strict=True)]
            )
        )
        quality_candidates_import(run=run, model=model, path=str(path))
    batch = batch_publish(
        batch=batch_create(
            run=run, stage=QualityStage.RATING, provider="simulated", assignments_per_hit=3
        )
    )
    simulate_crowd(batch=batch, workers=5, profile=WorkerProfile(accuracy=0.95), seed=1)
    job = run_on_commit(quality_export_start, run=run)
    job.refresh_from_db()
    folder = Path(Export.objects.get(pk=job.result["export"]).path)
    expert = folder / "flickr8k_expert_layout.json"
    clip = _set(run_on_commit, dataset)
    written = quality_encoder_scores(run=run, embedding_set=clip)
    assert set(written) == {"CLIP-S", "RefCLIP-S", "PAC-S-style", "RefPAC-S-style"}
    # CLIP-S by hand from the stored image rows and the candidates encoded independently.
    from pipeline.encoders.encode import encode_texts
    from pipeline.encoders.loading import encoder_load

    encoder = encoder_load(import_dir / "tiny-clip")
    arrays = services.embedding_set_arrays(embedding_set=clip)
    rows = {int(i): r for i, r in zip(arrays["image_ids"], arrays["image_embeddings"], strict=True)}
    with open(written["CLIP-S"]) as handle:
        table = list(csv.DictReader(handle))
    by_name = {i.file_name: i.coco_id for i in images}
    texts = encode_texts(encoder, [r["caption"] for r in table]).rows
    for row, t in zip(table, texts, strict=True):
        cos = float(rows[by_name[row["image"]]].astype(np.float64) @ t)
        assert float(row["score"]) == pytest.approx(2.5 * max(cos, 0.0), abs=2e-4)
    report = quality_correlate(expert=str(expert), metric=written["CLIP-S"])
    judged = load_derived(str(expert))
    table_scores = {(r["image"].rsplit(".", 1)[0], r["caption"]): float(r["score"]) for r in table}
    ours = [table_scores[(j.image_id.rsplit(".", 1)[0], j.caption)] for j in judged]
    tau = report["flickr8k_expert_layout"]["metrics"]["CLIP-S"]["tau_b"]
    assert tau == round(
        float(kendalltau(ours, [j.rating for j in judged], variant="b").statistic), 4
    )

    siglip = _set(run_on_commit, dataset, model="tiny-siglip")
    assert set(quality_encoder_scores(run=run, embedding_set=siglip)) == {"SigLIP-S", "RefSigLIP-S"}
    with pytest.raises(Exception, match="does not apply to siglip"):
        quality_encoder_scores(run=run, embedding_set=siglip, scores=["CLIP-S"])


def _scored_run(dataset, tmp_path):
    run = quality_run_create(dataset=dataset, config={"pairs_per_image": 4})
    rows = [{"image_id": i.coco_id, "caption": "a red car"} for i in dataset.images.all()]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(rows))
    quality_candidates_import(run=run, model="m", path=str(path))
    return run


def test_caption_scores_of_a_hostile_model_name_stay_under_media(
    dataset, import_dir, run_on_commit, tmp_path
):
    """Issue 47: a set named "../../../../escaped" (stored before names were checked) made
    the scores' CSVs land outside MEDIA_ROOT; its label is now one slug of a folder."""
    run = _scored_run(dataset, tmp_path)
    es = _set(run_on_commit, dataset)
    EmbeddingSet.objects.filter(pk=es.pk).update(model_name="../../../../escaped")
    es.refresh_from_db()
    written = quality_encoder_scores(run=run, embedding_set=es, scores=["CLIP-S"])
    media = (tmp_path / "media").resolve()
    folder = media / "runs" / str(run.pk) / "quality"
    assert [Path(p).resolve().parent.parent for p in written.values()] == [folder]
    assert [p for p in tmp_path.rglob("*escaped*") if media not in p.resolve().parents] == []


def test_caption_scores_never_follow_a_link_out_of_media(
    dataset, import_dir, run_on_commit, tmp_path
):
    run = _scored_run(dataset, tmp_path)
    es = _set(run_on_commit, dataset)
    runs = tmp_path / "media" / "runs" / str(run.pk)
    runs.mkdir(parents=True, exist_ok=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (runs / "quality").symlink_to(outside, target_is_directory=True)
    with pytest.raises(InputError, match="outside the media folder") as err:
        quality_encoder_scores(run=run, embedding_set=es, scores=["CLIP-S"])
    assert str(tmp_path) not in str(err.value)
    assert list(outside.iterdir()) == []
