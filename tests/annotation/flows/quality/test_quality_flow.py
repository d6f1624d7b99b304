"""Caption-quality judgments end to end: candidates imported, three task types answered by
simulated workers, export in the Flickr8k layouts, metric correlation."""

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import kendalltau

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.errors import AnswerError
from annotation.flows.quality.models import Candidate
from annotation.flows.quality.services.candidates import (
    quality_candidates_import,
    quality_items_create,
    quality_run_create,
)
from annotation.flows.quality.services.correlate import quality_correlate
from annotation.flows.quality.services.export import CF_FILE, EXPERT_FILE, quality_export_start
from annotation.flows.quality.simulate import candidate_quality
from annotation.flows.quality.vocabulary import QualityItemKind, QualityStage
from annotation.models import Export, Item, JobState, Question
from annotation.selectors.release.simulated_quality import run_world
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.claim import assignment_claim_next
from annotation.services.work.submit import assignment_submit
from annotation.services.work.worker_identity import worker_get_or_create
from pipeline.errors import InputError
from pipeline.flickr8k import load_derived
from pipeline.simulate import WorkerProfile

pytestmark = pytest.mark.django_db
FLICKR = Path(__file__).resolve().parents[3] / "data" / "flickr8k"


def results(tmp_path, dataset, name, texts):
    images = list(dataset.images.order_by("coco_id").values_list("coco_id", flat=True))
    path = tmp_path / f"{name}.json"
    path.write_text(
        json.dumps([{"image_id": i, "caption": t} for i, t in zip(images, texts, strict=False)])
    )
    return path


def own_captions(dataset):
    """Each image's first caption without its last word: a good caption of that image."""
    return [
        " ".join(image.captions.order_by("coco_id").first().text.split()[:-1])
        for image in dataset.images.order_by("coco_id")
    ]


@pytest.fixture
def quality_run(dataset, tmp_path):
    run = quality_run_create(dataset=dataset, config={"pairs_per_image": 4})
    n = dataset.images.count()
    quality_candidates_import(
        run=run,
        model="good",
        path=str(results(tmp_path, dataset, "good", own_captions(dataset))),
    )
    quality_candidates_import(
        run=run,
        model="bad",
        path=str(results(tmp_path, dataset, "bad", ["a red car in a city"] * n)),
    )
    return run


def test_candidates_import_checks_every_record_and_writes_nothing_on_error(dataset, tmp_path):
    run = quality_run_create(dataset=dataset)
    bad = tmp_path / "bad.json"
    first = dataset.images.first().coco_id
    bad.write_text(
        json.dumps([{"image_id": first, "caption": "ok"}, {"image_id": 987654, "caption": "x"}])
    )
    with pytest.raises(InputError) as caught:
        quality_candidates_import(run=run, model="m", path=str(bad))
    assert (caught.value.file, caught.value.record, caught.value.field) == (str(bad), 1, "image_id")
    bad.write_text(json.dumps([{"image_id": first, "caption": "  "}]))
    with pytest.raises(InputError) as caught:
        quality_candidates_import(run=run, model="m", path=str(bad))
    assert caught.value.field == "caption"
    with pytest.raises(InputError):
        quality_candidates_import(run=run, model="reference", path=str(bad))
    assert not Candidate.objects.exists()
    good = results(tmp_path, dataset, "m", ["a dog"] * 2)
    assert quality_candidates_import(run=run, model="m", path=str(good)) == 2
    assert quality_candidates_import(run=run, model="m", path=str(good)) == 0  # rows written


def test_items_cover_every_candidate_and_the_four_categories(quality_run):
    counts = quality_items_create(run=quality_run)
    n = quality_run.dataset.images.count()
    assert counts["candidates"] == 2 * n
    assert counts["pairs"] == 4 * n and all(counts[c] > 0 for c in ("HC", "HI", "HM", "MM"))
    for pair in Item.objects.filter(kind=QualityItemKind.CANDIDATE_PAIR).select_related(
        "candidate", "candidate2"
    ):
        assert pair.candidate.text != pair.candidate2.text  # never two identical captions
        sources = {pair.candidate.source, pair.candidate2.source}
        if pair.tag == "HC":
            assert sources == {"reference"} and pair.candidate2.image_id == pair.positive_id
        elif pair.tag == "HI":
            assert sources == {"reference"} and pair.candidate2.image_id != pair.positive_id
        elif pair.tag == "HM":
            assert "reference" in sources and len(sources) == 2
        else:
            assert sources == {"good", "bad"}


def test_binary_judgments_need_three_workers(quality_run):
    with pytest.raises(InputError) as caught:
        batch_create(
            run=quality_run, stage=QualityStage.BINARY, provider="local", assignments_per_hit=2
        )
    assert caught.value.field == "assignments_per_hit"


def test_a_preference_is_recorded_for_the_caption_not_the_side(quality_run):
    batch = batch_publish(
        batch=batch_create(
            run=quality_run, stage=QualityStage.PREFERENCE, provider="local", items_per_hit=24
        )
    )
    worker = worker_get_or_create(provider="local", external_id="w")
    assignment = assignment_claim_next(batch=batch, worker=worker)
    questions = list(assignment.hit.questions.order_by("position"))
    assert any(q.swapped for q in questions) and not all(q.swapped for q in questions)
    answers = {f"q{q.position}": "a" for q in questions}
    assignment_submit(assignment_id=assignment.pk, worker=worker, answers=answers)
    for q in questions:
        label = q.answers.get().label
        assert label == ("second" if q.swapped else "first")
    with pytest.raises(AnswerError):
        other = worker_get_or_create(provider="local", external_id="v")
        mine = assignment_claim_next(batch=batch, worker=other)
        assignment_submit(assignment_id=mine.pk, worker=other, answers={"q0": "c"})


def test_judgments_to_the_flickr8k_layouts_and_correlation(quality_run, run_on_commit, tmp_path):
    profile = WorkerProfile(accuracy=0.95)
    for stage, per_hit in (
        (QualityStage.RATING, 3),
        (QualityStage.BINARY, 3),
        (QualityStage.PREFERENCE, 5),
    ):
        batch = batch_publish(
            batch=batch_create(
                run=quality_run, stage=stage, provider="simulated", assignments_per_hit=per_hit
            )
        )
        simulate_crowd(batch=batch, workers=per_hit + 2, profile=profile, seed=1)
    job = run_on_commit(quality_export_start, run=quality_run)
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED, job.error
    folder = Path(Export.objects.get(pk=job.result["export"]).path)
    expert, cf = load_derived(folder / EXPERT_FILE), load_derived(folder / CF_FILE)
    n = quality_run.dataset.images.count()
    assert len(expert) == 3 * 2 * n  # one judgement per rating, as Flickr8k-Expert
    assert len(cf) == 2 * n and all(0.0 <= j.rating <= 1.0 for j in cf)
    assert all(1 <= j.rating <= 4 for j in expert) and all(j.references for j in expert)
    raw = json.loads((folder / EXPERT_FILE).read_text())
    entry = next(iter(raw.values()))
    assert set(entry) == {"human_judgement", "image_id", "image_path", "ground_truth"}
    assert set(entry["human_judgement"][0]) == {"image_id", "image_path", "caption", "rating"}
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["agreement"]["quality_rating"]["workers_per_item"] == 3
    assert "mean_share_with_majority" in manifest["agreement"]["quality_preference"]
    # Each preferred caption's Bradley-Terry strength lies inside its 95 % interval; every
    # judgment counts once for each of its two captions.
    with (folder / "quality_preference_strengths.csv").open() as fh:
        strengths = list(csv.DictReader(fh))
    judgments = manifest["agreement"]["quality_preference"]["judgments"]
    assert sum(int(r["comparisons"]) for r in strengths) == 2 * judgments
    assert sum(int(r["wins"]) for r in strengths) == judgments
    for row in strengths:
        assert float(row["low95"]) <= float(row["strength"]) <= float(row["high95"])
    # People judge by each caption's latent quality (never its words): a metric that knows
    # which captions are good agrees with them. Keys: (image file name stem, caption).
    world = run_world(quality_run)
    quality = {}
    for question in Question.objects.filter(item__run=quality_run).select_related(
        "item__candidate", "item__candidate2", "item__positive"
    ):
        stem = question.item.positive.file_name.rsplit(".", 1)[0]
        for second in (False, True):
            candidate = question.item.candidate2 if second else question.item.candidate
            if candidate is not None:
                quality[(stem, candidate.text)] = candidate_quality(question, world, second=second)

    def score(image, caption):
        return quality.get((image.rsplit(".jpg", 1)[0], caption), 0.0)

    metric = tmp_path / "metric.csv"
    with metric.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["image", "caption", "score"])
        for j in expert + cf:
            writer.writerow([j.image_id, j.caption, score(j.image_id, j.caption)])
        with (folder / "quality_preference.csv").open() as prefs:
            for row in csv.DictReader(prefs):
                for caption in (row["caption_first"], row["caption_second"]):
                    writer.writerow([row["image"], caption, score(row["image"], caption)])
    report = quality_correlate(
        expert=str(folder / EXPERT_FILE),
        cf=str(folder / CF_FILE),
        preferences=str(folder / "quality_preference.csv"),
        metric=str(metric),
    )
    tau = report["flickr8k_expert_layout"]["metrics"]["metric"]["tau_b"]
    human = [j.rating for j in expert]
    ours = [score(j.image_id, j.caption) for j in expert]
    assert tau == round(float(kendalltau(ours, human, variant="b").statistic), 4)
    assert tau > 0.3
    assert report["preferences"]["metric"]["MM"] > 80


def test_the_export_job_says_its_counts_in_words(quality_run, run_on_commit, admin_client):
    """The job's message on the dashboard and its page: sentences, never a Python dict."""
    batch = batch_publish(
        batch=batch_create(
            run=quality_run, stage=QualityStage.RATING, provider="simulated", assignments_per_hit=3
        )
    )
    simulate_crowd(batch=batch, workers=4, profile=WorkerProfile(accuracy=0.95), seed=1)
    job = run_on_commit(quality_export_start, run=quality_run)
    job.refresh_from_db()
    rated = job.result["judged"][QualityStage.RATING]
    assert job.message.endswith(f"{rated} captions rated -> caption-quality v1"), job.message
    for url in ("/", f"/jobs/{job.pk}/"):
        page = admin_client.get(url).content.decode()
        assert f"{rated} captions rated" in page and "{&#x27;" not in page, url


def test_embedding_metrics_on_the_real_flickr8k_samples(tmp_path):
    """CLIP-S / PAC-S-style from embeddings, here a named stand-in (seeded random vectors: no
    CLIP features can be downloaded), on the real Flickr8k samples: the machinery and the tau
    values against scipy, not the paper's numbers."""
    from pipeline.caption_metrics import CLIP_S_W, reference_free

    rows = load_derived(FLICKR / "flickr8k_expert.sample.derived.json")
    images = sorted({j.image_id for j in rows})
    texts = sorted({j.caption for j in rows} | {r for j in rows for r in j.references})
    rng = np.random.default_rng(0)
    img, txt = rng.normal(size=(len(images), 16)), rng.normal(size=(len(texts), 16))
    path = tmp_path / "standin.npz"
    np.savez(
        path,
        image_keys=np.asarray(images),
        image_embeddings=img,
        texts=np.asarray(texts),
        text_embeddings=txt,
    )
    report = quality_correlate(
        expert=str(FLICKR / "flickr8k_expert.sample.derived.json"), embeddings=str(path)
    )
    metrics = report["flickr8k_expert_layout"]["metrics"]
    assert set(metrics) == {"CLIP-S", "RefCLIP-S", "PAC-S-style", "RefPAC-S-style"}
    ti = {t: n for n, t in enumerate(texts)}
    ii = {t: n for n, t in enumerate(images)}
    clip = reference_free(
        img[[ii[j.image_id] for j in rows]], txt[[ti[j.caption] for j in rows]], w=CLIP_S_W
    )
    human = [j.rating for j in rows]
    assert metrics["CLIP-S"]["tau_b"] == round(
        float(kendalltau(clip, human, variant="b").statistic), 4
    )
    assert metrics["CLIP-S"]["tau_c"] == round(
        float(kendalltau(clip, human, variant="c").statistic), 4
    )
    bad = tmp_path / "nan.npz"
    np.savez(
        bad,
        image_keys=np.asarray(images),
        image_embeddings=img * np.nan,
        texts=np.asarray(texts),
        text_embeddings=txt,
    )
    with pytest.raises(InputError) as caught:
        quality_correlate(
            expert=str(FLICKR / "flickr8k_expert.sample.derived.json"), embeddings=str(bad)
        )
    assert caught.value.field == "image_embeddings"


def test_flickr8k_references_and_candidates_by_image_name(tmp_path, settings):
    from annotation.services.datasets.datasets import dataset_import_flickr8k

    folder = tmp_path / "flickr"
    folder.mkdir()
    # A folder holding none of the images is refused: one of them is enough to import.
    first = (FLICKR / "Flickr8k.token.sample.txt").read_text().split("#", 1)[0]
    (folder / first).write_bytes(b"")
    result = dataset_import_flickr8k(
        path=str(FLICKR / "Flickr8k.token.sample.txt"),
        name="flickr8k-sample",
        image_location=str(folder),
    )
    dataset = result.dataset
    assert result.captions == 1004 and dataset.images.filter(file_name__endswith=".jpg").exists()
    run = quality_run_create(dataset=dataset)
    expert = load_derived(FLICKR / "flickr8k_expert.sample.derived.json")
    rows = [{"image_id": j.image_id, "caption": j.caption} for j in expert]  # names, no .jpg
    path = tmp_path / "human.json"
    path.write_text(json.dumps(rows))
    written = quality_candidates_import(run=run, model="flickr8k-candidates", path=str(path))
    assert written == len({(j.image_id, " ".join(j.caption.split())) for j in expert})
    bad = tmp_path / "bad_token.txt"
    bad.write_text("1.jpg#0\tA dog .\nno tab here\n")
    with pytest.raises(InputError) as caught:
        dataset_import_flickr8k(path=str(bad), name="bad", image_location=str(folder))
    assert (caught.value.record, caught.value.field) == (2, "caption")


def _metric_file(path, rows, scores):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["image", "caption", "score"])
        for j, s in zip(rows, scores, strict=True):
            writer.writerow([j.image_id, j.caption, s])


def test_a_nan_rating_is_skipped_and_counted_as_pacscore_does(tmp_path):
    """A real Flickr8k-Expert file with one rating NaN (the full file has some): tau over the
    other judgements, not NaN, and the report says one was skipped."""
    source = FLICKR / "flickr8k_expert.sample.derived.json"
    document = json.loads(source.read_text())
    first = next(iter(document))
    document[first]["human_judgement"][0]["rating"] = float("nan")
    path = tmp_path / "with_nan.json"
    path.write_text(json.dumps(document))  # json writes NaN, as the real file has it
    rows = load_derived(source)
    # One score per caption (each caption has three expert ratings).
    rng = np.random.default_rng(3)
    by_caption = {(j.image_id, j.caption): float(rng.normal()) for j in rows}
    scores = [by_caption[(j.image_id, j.caption)] for j in rows]
    metric = tmp_path / "metric.csv"
    _metric_file(metric, rows, scores)
    report = quality_correlate(expert=str(path), metric=str(metric))["flickr8k_expert_layout"]
    assert report["skipped_nan_ratings"] == 1 and report["judgements"] == len(rows) - 1
    taus = report["metrics"]["metric"]
    expected = kendalltau(scores[1:], [j.rating for j in rows[1:]], variant="c").statistic
    assert taus["tau_c"] == round(float(expected), 4) and np.isfinite(taus["tau_b"])


def test_a_caption_with_doubled_spaces_matches_its_score_as_pacscore_reads_it(tmp_path):
    """pacscore reads `' '.join(caption.split())`: a doubled space in the judgments (or the
    metric file) is the same caption, not a missing score."""
    source = FLICKR / "flickr8k_expert.sample.derived.json"
    document = json.loads(source.read_text())
    first = next(iter(document))
    caption = document[first]["human_judgement"][0]["caption"]
    document[first]["human_judgement"][0]["caption"] = caption.replace(" ", "  ", 1) + " "
    path = tmp_path / "spaced.json"
    path.write_text(json.dumps(document))
    rows = load_derived(source)
    metric = tmp_path / "metric.csv"
    _metric_file(metric, rows, np.arange(len(rows), dtype=float))
    report = quality_correlate(expert=str(path), metric=str(metric))
    assert report["flickr8k_expert_layout"]["judgements"] == len(rows)
    assert load_derived(path)[0].caption == " ".join(caption.split())


def test_pascal50s_preferences_average_five_draws_of_five_references(tmp_path):
    """Reference-based accuracy on preferences is Pascal-50S's protocol (PAC-S Table 4): five
    references drawn from each pair's 48, five seeded draws, accuracy averaged; without
    references the reference-based metrics are left out rather than scored against nothing."""
    from pipeline.caption_metrics import (
        CLIP_S_W,
        mean_accuracy,
        pairwise_accuracy,
        reference_based,
        reference_draws,
        reference_free,
    )

    rng = np.random.default_rng(5)
    images = [f"img{i}" for i in range(12)]
    refs = {im: [f"{im} reference number {n}" for n in range(48)] for im in images}
    firsts = {im: f"{im} first caption" for im in images}
    seconds = {im: f"{im} second caption" for im in images}
    texts = [t for im in images for t in [*refs[im], firsts[im], seconds[im]]]
    img, txt = rng.normal(size=(len(images), 8)), rng.normal(size=(len(texts), 8))
    npz = tmp_path / "emb.npz"
    np.savez(
        npz,
        image_keys=np.asarray(images),
        image_embeddings=img,
        texts=np.asarray(texts),
        text_embeddings=txt,
    )
    prefs = tmp_path / "quality_preference.csv"
    with prefs.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["image", "category", "caption_first", "caption_second", "share_first"])
        for n, im in enumerate(images):
            writer.writerow([im, ("HC", "HI", "HM", "MM")[n % 4], firsts[im], seconds[im], 0.75])
    ref_file = tmp_path / "references.json"
    ref_file.write_text(json.dumps(refs))

    report = quality_correlate(
        preferences=str(prefs), embeddings=str(npz), references=str(ref_file)
    )
    assert report["preferences_references"] == {"draws": 5, "references_per_draw": 5, "seed": 0}
    at = {t: n for n, t in enumerate(texts)}
    a_emb, b_emb = txt[[at[firsts[i]] for i in images]], txt[[at[seconds[i]] for i in images]]
    clip_a, clip_b = reference_free(img, a_emb, w=CLIP_S_W), reference_free(img, b_emb, w=CLIP_S_W)
    cats = [("HC", "HI", "HM", "MM")[n % 4] for n in range(len(images))]
    per_draw = []
    for drawn in reference_draws([refs[i] for i in images], seed=0):
        embedded = [txt[[at[r] for r in d]] for d in drawn]
        assert all(len(e) == 5 for e in embedded)
        per_draw.append(
            pairwise_accuracy(
                reference_based(clip_a, a_emb, embedded),
                reference_based(clip_b, b_emb, embedded),
                [0.75] * len(images),
                cats,
            )
        )
    assert report["preferences"]["RefCLIP-S"] == mean_accuracy(per_draw)
    assert report["preferences"]["CLIP-S"] == pairwise_accuracy(
        clip_a, clip_b, [0.75] * len(images), cats
    )
    bare = quality_correlate(preferences=str(prefs), embeddings=str(npz))
    assert "RefCLIP-S" not in bare["preferences"] and "CLIP-S" in bare["preferences"]
    ref_file.write_text(json.dumps({images[0]: refs[images[0]]}))
    with pytest.raises(InputError) as caught:
        quality_correlate(preferences=str(prefs), embeddings=str(npz), references=str(ref_file))
    assert (caught.value.record, caught.value.field) == (3, "image")
