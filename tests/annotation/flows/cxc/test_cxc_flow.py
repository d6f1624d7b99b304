"""The CxC flow end to end on simulated raters: indirect sampling, rating HITs with gold
pairs, intermodal pairs from the top-rated intramodal ones, export in CxC's layout."""

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.flows.cxc.services.evaluate import cxc_evaluate
from annotation.flows.cxc.services.export import cxc_export_start
from annotation.flows.cxc.services.sampling import cxc_gold_import, cxc_run_create, cxc_sample_start
from annotation.flows.cxc.vocabulary import CxcItemKind, CxcStage
from annotation.models import Export, GoldItemKind, Item, Job, JobState, Review
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.claim import assignment_claim_next
from annotation.services.work.submit import assignment_submit
from annotation.services.work.worker_identity import worker_get_or_create
from pipeline.cxc import load_sis, load_sits, load_sts
from pipeline.errors import InputError
from pipeline.simulate import WorkerProfile

pytestmark = pytest.mark.django_db

SMALL = {
    "sis_pairs": 6,
    "sts_pairs": 6,
    "cocaption_pairs": 4,
    "intrasim_pairs": 4,
    "original_pairs": 5,
    "neighbours": 3,
    "random_per_example": 2,
    "text_epochs": 5,
    "text_dim": 16,
}
SAMPLE_CXC = Path(__file__).resolve().parents[4] / "data" / "sample" / "cxc"


@pytest.fixture
def cxc_run(dataset):
    return cxc_run_create(dataset=dataset, config=SMALL)


def sampled(run, run_on_commit, **kwargs):
    kwargs.setdefault("image_embeddings_path", None)
    kwargs.setdefault("standin", True)
    job = run_on_commit(cxc_sample_start, run=run, **kwargs)
    job.refresh_from_db()
    return job


def test_sampling_makes_pairs_of_each_intramodal_method(cxc_run, run_on_commit):
    job = sampled(cxc_run, run_on_commit)
    assert job.state == JobState.SUCCEEDED, job.error
    counts = job.result["pairs"]
    assert counts == {"i2i_csim": 6, "c2c_isim": 6, "c2c_cocaption": 4}
    assert (
        job.result["image_embeddings_standin"] is True and "stand-in" in job.result["standin_note"]
    )
    items = Item.objects.filter(run=cxc_run, kind=CxcItemKind.RATING_PAIR)
    sis = items.filter(tag="i2i_csim")
    assert all(i.negative_id and i.positive_id != i.negative_id for i in sis)
    sts = items.filter(tag="c2c_isim").select_related("caption", "caption2")
    assert all(i.caption.image_id != i.caption2.image_id for i in sts)  # two examples
    cocap = items.filter(tag="c2c_cocaption").select_related("caption", "caption2")
    assert all(i.caption.image_id == i.caption2.image_id for i in cocap)  # one example


def test_image_similarity_never_falls_back_to_captions(cxc_run):
    with pytest.raises(InputError) as caught:
        cxc_sample_start(run=cxc_run, image_embeddings_path=None, standin=False)
    assert caught.value.field == "image_embeddings"
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    ("arrays", "field", "record"),
    [
        (
            {"image_ids": [1, 2], "image_embeddings": [[1.0, np.nan], [0.0, 1.0]]},
            "image_embeddings",
            "first",
        ),
        (
            {"image_ids": [1, 999999], "image_embeddings": [[1.0, 0.0], [0.0, 1.0]]},
            "image_ids",
            999999,
        ),
        ({"image_ids": [1, 2], "image_embeddings": [[1.0, 0.0, 2.0]]}, "image_embeddings", None),
    ],
)
def test_bad_image_embeddings_name_file_record_field(cxc_run, tmp_path, arrays, field, record):
    coco = list(cxc_run.dataset.images.order_by("coco_id").values_list("coco_id", flat=True))
    ids = [coco[0] if i == 1 else coco[1] if i == 2 else i for i in arrays["image_ids"]]
    path = tmp_path / "bad.npz"
    np.savez(
        path, image_ids=np.asarray(ids), image_embeddings=np.asarray(arrays["image_embeddings"])
    )
    with pytest.raises(InputError) as caught:
        cxc_sample_start(run=cxc_run, image_embeddings_path=str(path))
    assert caught.value.file == str(path) and caught.value.field == field
    if record == "first":
        assert caught.value.record == coco[0]
    elif record is not None:
        assert caught.value.record == record
    assert not Job.objects.exists() and not Item.objects.exists()


def test_user_image_embeddings_choose_caption_pairs(cxc_run, run_on_commit, tmp_path):
    images = list(cxc_run.dataset.images.order_by("coco_id").values_list("coco_id", flat=True))
    rng = np.random.default_rng(0)
    path = tmp_path / "img.npz"
    np.savez(path, image_ids=np.asarray(images), image_embeddings=rng.normal(size=(len(images), 8)))
    job = sampled(cxc_run, run_on_commit, image_embeddings_path=str(path), standin=False)
    assert job.state == JobState.SUCCEEDED, job.error
    assert (
        job.result["image_embeddings"] == str(path) and not job.result["image_embeddings_standin"]
    )


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"sis_pairs": -1}, "sis_pairs"),
        ({"bins": [0.5, 0.1]}, "bins"),
        ({"shares": [1]}, "shares"),
        ({"original_pairs": "some"}, "original_pairs"),
        ({"gold_tolerance": 9}, "gold_tolerance"),
    ],
)
def test_run_settings_are_checked(dataset, config, field):
    with pytest.raises(InputError) as caught:
        cxc_run_create(dataset=dataset, config=config)
    assert caught.value.field == field
    assert not dataset.runs.exists()


def test_the_new_run_form_takes_a_number_of_original_pairs(dataset, admin_client):
    """The form's text field for "all or a number" sends "20": that is the number 20."""
    from annotation.flows.cxc.settings import DEFAULTS

    form = {
        f"config_{key}": json.dumps(value) if isinstance(value, list) else str(value)
        for key, value in DEFAULTS.items()
    }
    form.update(dataset=dataset.pk, config_original_pairs="20", config_text_epochs="5")
    response = admin_client.post("/runs/new/cxc/", form)
    assert response.status_code == 302, response.content.decode()[-2000:]
    assert dataset.runs.get().config["original_pairs"] == 20


def rate_all(run, stage, *, workers=6, accuracy=0.9, seed=0, assignments=3):
    batch = batch_publish(
        batch=batch_create(
            run=run,
            stage=stage,
            provider="simulated",
            assignments_per_hit=assignments,
            items_per_hit=5,
        )
    )
    simulate_crowd(
        batch=batch, workers=workers, profile=WorkerProfile(accuracy=accuracy), seed=seed
    )
    return batch


def test_ratings_to_export_in_cxcs_layout(cxc_run, run_on_commit):
    sampled(cxc_run, run_on_commit)
    with pytest.raises(Exception, match="no rated"):
        batch_create(run=cxc_run, stage=CxcStage.SITS, provider="simulated")
    rate_all(cxc_run, CxcStage.SIS)
    rate_all(cxc_run, CxcStage.STS)
    image = cxc_run.dataset.images.first()
    Item.objects.create(  # a gold pair with an intermodal tag must not stop intermodal sampling
        run=cxc_run,
        kind=GoldItemKind.RATING,
        positive=image,
        caption=image.captions.first(),
        tag="c2i_original",
        target=4.5,
    )
    rate_all(cxc_run, CxcStage.SITS)  # intermodal pairs made from the top-rated ones
    sits = Item.objects.filter(run=cxc_run, kind=CxcItemKind.RATING_PAIR, tag__startswith="c2i")
    assert sits.filter(tag="c2i_intrasim").count() == 4
    assert sits.filter(tag="c2i_original").count() == 5
    for item in sits.filter(tag="c2i_intrasim").select_related("source", "caption"):
        assert item.source.tag in ("i2i_csim", "c2c_isim")
        assert item.caption.image_id != item.positive_id  # image of one example, caption of another
    job = run_on_commit(cxc_export_start, run=cxc_run)
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED, job.error
    export = Export.objects.get(pk=job.result["export"])
    folder = Path(export.path)
    assert sorted(p.name for p in folder.iterdir()) == [
        "CHANGES.md",
        "DATASHEET.md",
        "README.md",
        "croissant.json",
        "data",
        "manifest.json",
        "ratings.jsonl",
        "scale_model_val.csv",
        "sis_val.csv",
        "sits_val.csv",
        "sts_val.csv",
    ]
    # Beside each published row: the scale model's estimate inside its 95 % interval, and the
    # same agg_score as the published file.
    with (folder / "scale_model_val.csv").open() as fh:
        model = list(csv.DictReader(fh))
    published = {
        (first, second): score
        for name in ("sis", "sts", "sits")
        for first, second, score, _ in csv.reader(
            (folder / f"{name}_val.csv").read_text().splitlines()[1:]
        )
    }
    assert len(model) == len(published) == 25
    for row in model:
        assert published[(row["first"], row["second"])] == row["agg_score"]
        low, value, high = (float(row[k]) for k in ("model_low95", "model_score", "model_high95"))
        assert 0.0 <= low <= value <= high <= 5.0 and high > low
    # The project's own reader and the published header, ids and two-decimal scores.
    sis, sts, sits_rows = (
        load_sis(folder / "sis_val.csv"),
        load_sts(folder / "sts_val.csv"),
        load_sits(folder / "sits_val.csv"),
    )
    assert len(sis) == 6 and len(sts) == 10 and len(sits_rows) == 9
    for name in ("sis", "sts", "sits"):
        ours = (folder / f"{name}_val.csv").read_text().splitlines()
        assert (
            ours[0]
            == {
                "sis": "image1,image2,agg_score,sampling_method",
                "sts": "caption1,caption2,agg_score,sampling_method",
                "sits": "caption,image,agg_score,sampling_method",
            }[name]
        )
        for line in ours[1:]:
            fields = line.split(",")
            assert re.fullmatch(r"[0-5]\.[0-9]{2}", fields[2])
            for value in fields[:2]:
                assert re.fullmatch(
                    r"COCO_val2014_[0-9]{12}\.jpg|COCO_val2014:sentid:[0-9]+", value
                ), value
    sheet = (folder / "DATASHEET.md").read_text()
    for heading in ("## Motivation", "## Composition", "## Collection process", "## Pay"):
        assert heading in sheet
    assert "SIMULATED workers" in sheet and "c2i_original" in sheet
    # A simulated run's datasheet carries the flow's figures on the harder populations.
    assert "cxc             realistic   model: error vs latent" in sheet
    assert "cxc             held-out    mean: error vs latent" in sheet
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["pairs_per_sampling_method"] == {
        "c2c_cocaption": 4,
        "c2c_isim": 6,
        "c2i_intrasim": 4,
        "c2i_original": 5,
        "i2i_csim": 6,
    }
    sis_agreement = manifest["agreement"]["cxc_sis"]
    assert sis_agreement["raters_per_pair"]["median"] == 3
    assert sis_agreement["krippendorff_alpha_interval"] is not None
    assert manifest["sampling"]["image_embeddings_standin"] is True
    ratings = [json.loads(x) for x in (folder / "ratings.jsonl").read_text().splitlines()]
    assert len(ratings) == manifest["ratings"] + manifest["gold_ratings"]
    assert not any("sim-" in r["worker"] for r in ratings)  # pseudonymised


def test_gold_pairs_are_in_every_hit_and_a_miss_is_held(run_on_commit, sample_path):
    """The paper's gold (CxC's published ratings); the default is in services/runs/test_gold.py."""
    from annotation.services.datasets.datasets import dataset_import

    dataset = dataset_import(path=sample_path).dataset
    run = cxc_run_create(
        dataset=dataset,
        config={**SMALL, "sis_pairs": 10, "gold_tolerance": 1.0, "gold_source": "paper"},
    )
    n = cxc_gold_import(run=run, path=str(SAMPLE_CXC / "sis_val.subset.csv"), stage=CxcStage.SIS)
    assert n > 0
    sampled(run, run_on_commit)
    batch = batch_publish(
        batch=batch_create(run=run, stage=CxcStage.SIS, provider="local", items_per_hit=5)
    )
    for hit in batch.hits.all():
        assert hit.questions.filter(item__kind=GoldItemKind.RATING).count() == 1
    worker = worker_get_or_create(provider="local", external_id="rater")
    assignment = assignment_claim_next(batch=batch, worker=worker)
    answers = {}
    for q in assignment.hit.questions.select_related("item"):
        if q.item.kind == GoldItemKind.RATING:
            far = 0 if q.item.target >= 2.5 else 5  # more than 1 point away
            answers[f"q{q.position}"] = str(far)
        else:
            answers[f"q{q.position}"] = "3"
    assignment_submit(assignment_id=assignment.pk, worker=worker, answers=answers)
    review = Review.objects.get(assignment=assignment)
    # Named by the gold item's kind, as every flow's gold failures are (the page words it).
    assert review.reasons[0]["gold"] == GoldItemKind.RATING


def test_gold_import_refuses_an_unknown_sampling_method(cxc_run, tmp_path):
    bad = tmp_path / "sis_bad.csv"
    bad.write_text(
        "image1,image2,agg_score,sampling_method\n"
        "COCO_val2014_000000000001.jpg,COCO_val2014_000000000002.jpg,2.5,i2i_guess\n"
    )
    with pytest.raises(InputError) as caught:
        cxc_gold_import(run=cxc_run, path=str(bad), stage=CxcStage.SIS)
    assert (caught.value.file, caught.value.record, caught.value.field) == (
        str(bad),
        2,
        "sampling_method",
    )
    assert not Item.objects.filter(kind=GoldItemKind.RATING).exists()


def test_ratings_outside_the_scale_are_refused(cxc_run, run_on_commit):
    from annotation.errors import AnswerError

    sampled(cxc_run, run_on_commit)
    batch = batch_publish(
        batch=batch_create(run=cxc_run, stage=CxcStage.SIS, provider="local", items_per_hit=6)
    )
    worker = worker_get_or_create(provider="local", external_id="r")
    assignment = assignment_claim_next(batch=batch, worker=worker)
    answers = {f"q{q.position}": "3" for q in assignment.hit.questions.all()}
    answers["q0"] = "6"
    with pytest.raises(AnswerError) as caught:
        assignment_submit(assignment_id=assignment.pk, worker=worker, answers=answers)
    assert caught.value.field == "rating"


def test_evaluation_on_cxcs_own_files_matches_scipy(tmp_path, sample_path):
    from scipy.stats import kendalltau, spearmanr

    from pipeline.cxc import load_sis as read_sis
    from pipeline.cxc_eval import cosine_pairs

    rows = read_sis(SAMPLE_CXC / "sis_val.subset.csv")
    images = sorted({r.image_id_1 for r in rows} | {r.image_id_2 for r in rows})
    captions = sorted({r.caption_id for r in load_sits(SAMPLE_CXC / "sits_val.subset.csv")})
    rng = np.random.default_rng(1)
    model = tmp_path / "m.npz"
    img = rng.normal(size=(len(images), 8)).astype(np.float32)
    np.savez(
        model,
        image_ids=np.asarray(images),
        image_embeddings=img,
        caption_ids=np.asarray(captions),
        caption_embeddings=rng.normal(size=(len(captions), 8)),
    )
    folder = tmp_path / "cxc"
    folder.mkdir()
    for name in ("sis_val", "sits_val"):
        (folder / f"{name}.subset.csv").write_bytes(
            (SAMPLE_CXC / f"{name}.subset.csv").read_bytes()
        )
    report = cxc_evaluate(folder=str(folder), embeddings=str(model), draws=100)
    row = {c: n for n, c in enumerate(images)}
    sims = cosine_pairs(
        img, img, [row[r.image_id_1] for r in rows], [row[r.image_id_2] for r in rows]
    )
    human = [r.score for r in rows]
    sis = report["tasks"]["SIS"]
    assert sis["pairs"] == len(rows)
    assert sis["spearman"] == round(float(spearmanr(sims, human).statistic), 4)
    assert sis["kendall_tau_b"] == round(float(kendalltau(sims, human, variant="b").statistic), 4)
    low, high = sis["spearman_95ci"]
    assert low < high and low <= sis["spearman"] + 0.2
    assert set(report["retrieval"]) == {"i2t", "t2i", "t2t", "i2i"}
    assert "STS" not in report["tasks"]  # no sts file in the folder


def test_rating_pages_give_nothing_away(run_on_commit, sample_path, client):
    """Every byte of a SIS page: no gold flag, known rating, sampling method, similarity or
    image file name; gold pairs look like the others."""
    from annotation.services.datasets.datasets import dataset_import
    from tests.factories import join

    dataset = dataset_import(path=sample_path).dataset
    run = cxc_run_create(dataset=dataset, config={**SMALL, "sis_pairs": 10, "gold_source": "paper"})
    cxc_gold_import(run=run, path=str(SAMPLE_CXC / "sis_val.subset.csv"), stage=CxcStage.SIS)
    sampled(run, run_on_commit)
    batch = batch_publish(
        batch=batch_create(run=run, stage=CxcStage.SIS, provider="local", items_per_hit=5)
    )
    join(client, run, "reader")
    page = client.get(client.get(f"/work/{batch.pk}/next/")["Location"]).content.decode()
    lowered = page.lower()
    for word in ("gold", "target", "i2i_csim", "similarity", "sampling", "coco_val2014"):
        assert word not in lowered, word
    golds = Item.objects.filter(run=run, kind=GoldItemKind.RATING)
    for gold in golds[:50]:
        assert f"{gold.target:.2f}" not in page
    for image in dataset.images.all()[:100]:
        assert str(image.coco_id) not in page or "/img/" in page  # only opaque tokens
    assert page.count('class="question"') == 6  # five pairs and one gold, alike
