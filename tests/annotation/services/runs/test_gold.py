"""Gold copied from the run's own established items (issue 25), the default of the ECCV
Caption, CxC and caption-quality flows: which items are established, how copies are made and
dealt, the claim rule that keeps a worker from copies of items they had, the warnings, the
settings, and each flow's review, worker gold accuracy, export and simulated answers with it.
The attack tests are in test_gold_attacks.py."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.flows.cxc.vocabulary import CxcStage
from annotation.flows.eccv.vocabulary import EccvItemKind, EccvStage
from annotation.flows.quality.vocabulary import QualityItemKind, QualityStage
from annotation.models import GOLD_KINDS, Answer, Export, GoldItemKind, Item, Question, Review, Run
from annotation.selectors.release.simulated_quality import run_world
from annotation.selectors.reviews.gold import Agreement, items_established, stage_consensus
from annotation.services.runs.batches import batch_create, batch_publish, batch_warnings
from annotation.services.runs.gold import gold_kept_apart, gold_place
from annotation.services.runs.runs import run_check_config
from annotation.services.work.claim import assignment_claim_next
from annotation.services.work.worker_identity import worker_get_or_create
from annotation.tasktypes import task_type_for
from pipeline.errors import InputError
from pipeline.simulate import WorkerProfile
from tests.annotation.conftest import rankings_file
from tests.annotation.held_reviews import answer_all, quality_run_for
from tests.annotation.services.runs.test_gold_attacks import caption_pair

pytestmark = pytest.mark.django_db


# --- a caption-quality run: the smallest flow to show the mechanics on -----------------------


@pytest.fixture
def quality_run(dataset, tmp_path):
    return quality_run_for(dataset, tmp_path)


def yes_for_long(question) -> str:  # type: ignore[no-untyped-def]
    return "yes" if question.item.candidate.source == "long" else "no"


def calibrated(run, stage=QualityStage.BINARY, *, raters=("a", "b", "c"), pick=yes_for_long):  # type: ignore[no-untyped-def]
    """The stage's first batch (half its items), answered alike by `raters`."""
    batch = batch_publish(
        batch=batch_create(run=run, stage=stage, provider="local", assignments_per_hit=3, limit=6)
    )
    for name in raters:
        answer_all(batch, name, pick)
    return batch


def test_items_are_established_by_enough_distinct_workers_agreeing(quality_run):
    first = calibrated(quality_run, raters=("a", "b"))
    rule = Agreement(min_answers=3, share=1.0)
    assert items_established(run=quality_run, stage=QualityStage.BINARY, agreement=rule) == []
    later = batch_publish(
        batch=batch_create(
            run=quality_run, stage=QualityStage.BINARY, provider="local", assignments_per_hit=3
        )
    )
    assert not Question.objects.filter(hit__batch=later, item__kind__in=GOLD_KINDS).exists()
    # A third worker agrees on every item but one, where they say the opposite.
    items = list(Item.objects.filter(questions__hit__batch=first).order_by("pk"))
    odd = items[0]

    def third(question):  # type: ignore[no-untyped-def]
        wanted = yes_for_long(question)
        return ("no" if wanted == "yes" else "yes") if question.item == odd else wanted

    answer_all(first, "c", third)
    found = items_established(run=quality_run, stage=QualityStage.BINARY, agreement=rule)
    assert [e.item_id for e in found] == [i.pk for i in items[1:]]
    assert {e.label for e in found} == {"yes", "no"} and {e.answers for e in found} == {3}
    # Two of three agreeing is enough at a share of 0.6, never a tie.
    loose = items_established(
        run=quality_run, stage=QualityStage.BINARY, agreement=Agreement(min_answers=3, share=0.6)
    )
    assert odd.pk in {e.item_id for e in loose}
    # Work held by a review does not count.
    held = Answer.objects.filter(question__item=items[1]).first().assignment
    Review.objects.create(assignment=held, reasons=[{"gold": "x"}])
    found = items_established(run=quality_run, stage=QualityStage.BINARY, agreement=rule)
    assert items[1].pk not in {e.item_id for e in found}


def test_ratings_are_established_by_their_spread_and_shares_cover_every_judged_item(
    quality_run,
):
    values = {"a": "4", "b": "3", "c": "4"}
    batch = batch_publish(
        batch=batch_create(
            run=quality_run, stage=QualityStage.RATING, provider="local", assignments_per_hit=3
        )
    )
    items = list(Item.objects.filter(questions__hit__batch=batch).order_by("pk"))
    for name, value in values.items():
        answer_all(batch, name, lambda q, v=value: "1" if q.item == items[0] and v == "3" else v)
    consensus = stage_consensus(
        run=quality_run,
        stage=QualityStage.RATING,
        agreement=Agreement(min_answers=3, spread=1.0),
    )
    means = {e.item_id: e.mean for e in consensus.established}
    assert items[0].pk not in means  # 4, 1, 4: three points apart
    assert means[items[1].pk] == pytest.approx(11 / 3)
    assert consensus.shares == {"3": 1 / len(items), "4": (len(items) - 1) / len(items)}


def test_copies_show_what_their_item_showed_are_made_once_and_reused(quality_run, client):
    from tests.factories import join

    calibrated(quality_run)
    second = batch_publish(
        batch=batch_create(
            run=quality_run, stage=QualityStage.BINARY, provider="local", assignments_per_hit=3
        )
    )
    gold = Question.objects.filter(hit__batch=second, item__kind__in=GOLD_KINDS)
    assert gold.count() == second.hits.count() == 1  # one per HIT
    copy = gold.get().item
    source = copy.source
    assert source.questions.exclude(hit__batch=second).exists()
    for name in ("positive_id", "candidate_id", "candidate2_id", "caption_id", "tag"):
        assert getattr(copy, name) == getattr(source, name)
    assert copy.kind == (
        GoldItemKind.POSITIVE if source.candidate.source == "long" else GoldItemKind.NEGATIVE
    )
    # The page shows the copy's image like any other (a token of this batch, not
    # "Unavailable"), and nothing of it differs from the real questions.
    join(client, quality_run, "reader")
    page = client.get(client.get(f"/work/{second.pk}/next/")["Location"]).content.decode()
    assert 'src=""' not in page and "gold" not in page.lower()
    # Asked again (a later batch), the stage gives the same copy: one row per item and kind.
    again = task_type_for(QualityStage.BINARY).gold_copies(run=quality_run, items=[], options={})
    assert copy.pk in {c.pk for c in again.by_kind[copy.kind]}
    assert Item.objects.filter(run=quality_run, source=source, kind=copy.kind).count() == 1


def test_copies_are_dealt_evenly_in_the_answers_shares_and_never_twice_in_a_hit():
    items = [Item(pk=n) for n in range(1, 7)]
    plans = [[Item(pk=100 + h)] * 3 for h in range(9)]
    plans = [list(p) for p in plans]
    weight = {1: 3.0, 2: 3.0, 3: 1.0, 4: 1.0, 5: 1.0, 6: 0.0}
    placed = gold_place(
        plans=plans, pools=[items], draw=random.Random(1), per_hit=[2], weight=weight
    )
    uses = Counter(i.pk for plan in placed for i in plan if i.pk < 100)
    assert all(len(plan) == 5 for plan in placed)
    assert all(len({i.pk for i in plan if i.pk < 100}) == 2 for plan in placed)
    assert 6 not in uses  # weight 0: never dealt
    assert max(uses.values()) - min(uses.values()) <= 1  # the least used first


def test_nobody_gets_a_copy_of_an_item_they_had(quality_run):
    calibrated(quality_run)  # workers a, b, c judged the first batch's items
    second = batch_publish(
        batch=batch_create(
            run=quality_run,
            stage=QualityStage.BINARY,
            provider="local",
            assignments_per_hit=3,
            items_per_hit=2,
        )
    )
    hits = second.hits.count()
    assert (
        hits >= 2
        and Question.objects.filter(hit__batch=second, item__kind__in=GOLD_KINDS).count() == hits
    )
    assert gold_kept_apart(second)  # the claim reads the rule for this stage
    for name in ("a", "b", "c"):
        worker = worker_get_or_create(provider="local", external_id=name)
        assert assignment_claim_next(batch=second, worker=worker) is None
    # A newcomer may take any HIT, but not a second one holding a copy it already answered.
    taken = answer_all(second, "d", yes_for_long)
    copies = [
        Question.objects.get(hit__assignments=a, item__kind__in=GOLD_KINDS).item_id for a in taken
    ]
    assert len(copies) == len(set(copies)) and taken
    shared = Counter(
        Question.objects.filter(hit__batch=second, item__kind__in=GOLD_KINDS).values_list(
            "item_id", flat=True
        )
    )
    assert len(taken) == hits - sum(n - 1 for n in shared.values())


def test_a_stage_without_established_items_warns_and_a_paper_run_does_not(quality_run):
    def gold_warnings(batch):  # type: ignore[no-untyped-def]
        return [w for w in batch_warnings(batch=batch) if "gold" in w]

    first = batch_create(
        run=quality_run,
        stage=QualityStage.BINARY,
        provider="local",
        assignments_per_hit=3,
        limit=6,
    )
    [warning] = gold_warnings(first)
    assert "no gold questions" in warning and "become gold" in warning
    batch_publish(batch=first)
    for name in ("a", "b", "c"):
        answer_all(first, name, yes_for_long)
    second = batch_create(
        run=quality_run, stage=QualityStage.BINARY, provider="local", assignments_per_hit=3
    )
    assert gold_warnings(second) == []
    rating = batch_create(
        run=quality_run, stage=QualityStage.RATING, provider="local", assignments_per_hit=1
    )
    [warning] = gold_warnings(rating)
    assert "calibration batch with at least 3 workers per HIT" in warning
    Run.objects.filter(pk=quality_run.pk).update(
        config={**quality_run.config, "gold_source": "paper"}
    )
    rating.refresh_from_db()
    assert gold_warnings(rating) == []  # the metric papers' procedure: no gold at all


@pytest.mark.parametrize("kind", ["eccv", "cxc", "caption_quality"])
def test_gold_settings_are_checked_per_flow(kind, dataset, admin_client):
    assert run_check_config(kind=kind, config={})["gold_source"] == "established"
    assert run_check_config(kind=kind, config={"gold_source": "paper"})["gold_source"] == "paper"
    for bad in ({"gold_source": "published"}, {"gold_min_answers": 1}):
        with pytest.raises(InputError) as caught:
            run_check_config(kind=kind, config=bad)
        assert caught.value.field == next(iter(bad))
    response = admin_client.post(
        "/api/runs/",
        {"dataset": dataset.pk, "kind": kind, "config": {"gold_source": "paper"}},
        content_type="application/json",
    )
    if kind != "eccv":  # ECCV's query sample needs more of the toy dataset than it has
        assert response.status_code == 201, response.content
        assert Run.objects.get(pk=response.json()["id"]).config["gold_source"] == "paper"


def test_the_command_line_takes_the_gold_source(dataset, capsys):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="gold_source"):
        call_command("cxc_create_run", dataset.name, "--config", '{"gold_source": "published"}')
    assert not Run.objects.exists()
    call_command("cxc_create_run", dataset.name, "--config", '{"gold_source": "paper"}')
    assert Run.objects.get(kind="cxc").config["gold_source"] == "paper"


def test_runs_made_before_keep_the_papers_gold(dataset):
    from importlib import import_module

    from django.apps import apps

    from annotation.services.runs.projects import project_default

    old = [
        Run.objects.create(
            dataset=dataset, kind=kind, config={"seed": 1}, project=project_default()
        )
        for kind in ("eccv", "cxc", "caption_quality", "bison")
    ]
    import_module("annotation.migrations.0019_gold_copies").keep_paper_gold(apps, None)
    assert [Run.objects.get(pk=r.pk).config.get("gold_source") for r in old] == [
        "paper",
        "paper",
        "paper",
        None,
    ]


# --- each flow with the default ---------------------------------------------------------------


def test_quality_gold_is_reviewed_counted_per_worker_and_left_out_of_the_export(
    quality_run, run_on_commit
):
    from annotation.flows.quality.services.export import quality_export_start
    from annotation.selectors.reviews.gold import worker_gold_tally

    calibrated(quality_run)
    second = batch_publish(
        batch=batch_create(
            run=quality_run, stage=QualityStage.BINARY, provider="local", assignments_per_hit=3
        )
    )
    [careless] = answer_all(
        second, "careless", lambda q: "no" if yes_for_long(q) == "yes" else "yes"
    )
    [careful] = answer_all(second, "careful", yes_for_long)
    copy = Question.objects.get(hit__batch=second, item__kind__in=GOLD_KINDS).item
    [reason] = Review.objects.get(assignment_id=careless).reasons
    expected = "yes" if copy.kind == GoldItemKind.POSITIVE else "no"
    assert reason["gold"] == copy.kind and reason["expected"] == [expected]
    assert not Review.objects.filter(assignment_id=careful).exists()
    tally = worker_gold_tally(quality_run)
    careful_worker = worker_get_or_create(provider="local", external_id="careful")
    assert tally[careful_worker.pk] == (1, 1)
    job = run_on_commit(quality_export_start, run=quality_run)
    job.refresh_from_db()
    assert job.state == "succeeded", job.error
    manifest = Export.objects.get(run=quality_run).manifest
    real = Item.objects.filter(run=quality_run, kind=QualityItemKind.CANDIDATE_CAPTION).count()
    assert manifest["agreement"]["quality_binary"]["items"] == real  # the copy left out


@pytest.fixture
def eccv_default(dataset, tmp_path, run_on_commit):
    """The conftest's small ECCV run with the default gold."""
    from annotation.flows.eccv.services.annotators import eccv_annotator_add
    from annotation.flows.eccv.services.proposal_job import eccv_propose_start
    from annotation.flows.eccv.services.runs import eccv_run_create

    run = eccv_run_create(
        dataset=dataset,
        config={"image_queries": 3, "caption_queries": 4, "k": 2, "models": 2, "seed": 1},
    )
    eccv_annotator_add(run=run, name="fasttext", kind="fasttext", params={"dim": 16, "epochs": 5})
    eccv_annotator_add(run=run, name="listed", kind="rankings", source=rankings_file(tmp_path, run))
    job = run_on_commit(eccv_propose_start, run=run)
    job.refresh_from_db()
    assert job.state == "succeeded", job.error
    return Run.objects.get(pk=run.pk)


def test_eccv_gold_is_two_copies_of_agreed_pairs_of_the_round_per_hit(eccv_default):
    from annotation.flows.eccv.selectors import eccv_judged_pairs, eccv_worker_gold
    from annotation.flows.eccv.simulate import latent_level

    options = {"direction": "i2t"}
    first = batch_publish(
        batch=batch_create(
            run=eccv_default,
            stage=EccvStage.JUDGMENT,
            provider="simulated",
            assignments_per_hit=3,
            items_per_hit=4,
            limit=8,
            options=options,
        )
    )
    assert not Question.objects.filter(hit__batch=first, item__kind__in=GOLD_KINDS).exists()
    simulate_crowd(
        batch=first, workers=3, profile=WorkerProfile(accuracy=1.0, gold_accuracy=1.0), seed=1
    )
    second = batch_publish(
        batch=batch_create(
            run=eccv_default,
            stage=EccvStage.JUDGMENT,
            provider="simulated",
            items_per_hit=6,
            options=options,
        )
    )
    world = run_world(eccv_default)
    for hit in second.hits.all():
        questions = list(hit.questions.select_related("item__source"))
        gold = [q.item for q in questions if q.item.kind in GOLD_KINDS]
        assert len(gold) == 2 and len(questions) <= 6
        for copy in gold:
            source = copy.source
            assert source.kind == EccvItemKind.CANDIDATE
            assert source.proposals.filter(direction="i2t").exists()
            assert (copy.positive_id, copy.caption_id) == (source.positive_id, source.caption_id)
            # The simulated crowd answers a copy as the pair it copies.
            assert latent_level(copy, world) == latent_level(source, world)
            positive = latent_level(source, world) <= 1
            assert copy.kind == (GoldItemKind.POSITIVE if positive else GoldItemKind.NEGATIVE)
    judged_before = eccv_judged_pairs(run=eccv_default).count()
    simulate_crowd(
        batch=second,
        workers=3,
        profile=WorkerProfile(accuracy=1.0, gold_accuracy=1.0),
        seed=2,
        id_prefix="second",
    )
    assert not Review.objects.exists()  # careful workers pass every copy
    gold = eccv_worker_gold(eccv_default)
    assert gold and all(right == total for right, total in gold.values())
    # Copies are checks, not pairs: the judged pairs grow by the second batch's candidates.
    added = Item.objects.filter(questions__hit__batch=second, kind=EccvItemKind.CANDIDATE).count()
    assert eccv_judged_pairs(run=eccv_default).count() == judged_before + added


def test_cxc_gold_is_a_copy_with_the_raters_mean_and_a_miss_is_held(dataset, run_on_commit):
    from annotation.flows.cxc.services.export import cxc_export_start
    from annotation.flows.cxc.services.sampling import cxc_run_create
    from annotation.models import Caption

    run = cxc_run_create(dataset=dataset, config={"sts_pairs": 0, "sis_pairs": 0})
    captions = list(Caption.objects.filter(dataset=dataset).order_by("pk"))
    Item.objects.bulk_create(
        caption_pair(run, a, b) for a, b in zip(captions[:12], captions[12:24], strict=True)
    )
    first = batch_publish(
        batch=batch_create(run=run, stage=CxcStage.STS, provider="local", limit=4)
    )
    for n, name in enumerate(("a", "b", "c", "d", "e")):
        answer_all(first, name, lambda q, n=n: str(2 + n % 2))  # 2, 3, 2, 3, 2
    second = batch_publish(
        batch=batch_create(run=run, stage=CxcStage.STS, provider="local", items_per_hit=4)
    )
    gold = Question.objects.filter(hit__batch=second, item__kind=GoldItemKind.RATING)
    assert gold.count() == second.hits.count() == 2
    copy = gold.first().item
    assert copy.target == pytest.approx(2.4) and copy.tag == "c2c_isim"
    assert (copy.caption_id, copy.caption2_id) == (copy.source.caption_id, copy.source.caption2_id)
    taken = answer_all(second, "f", lambda q: "5")  # 2.6 from the known rating: a miss
    assert Review.objects.filter(assignment_id__in=taken).count() == len(taken) > 0
    job = run_on_commit(cxc_export_start, run=run)
    job.refresh_from_db()
    assert job.state == "succeeded", job.error
    folder = Path(Export.objects.get(pk=job.result["export"]).path)
    rows = (folder / "sts_val.csv").read_text().strip().splitlines()[1:]
    assert len(rows) == 4  # the first batch's pairs; gold copies and held work left out


def test_a_preference_copy_expects_the_agreed_caption_whatever_side_it_is_shown_on(quality_run):
    def longer(question):  # type: ignore[no-untyped-def]
        item = question.item
        first, second = item.candidate.text, item.candidate2.text
        a = second if question.swapped else first
        b = first if question.swapped else second
        return "a" if (len(a), a) >= (len(b), b) else "b"

    def shorter(question):  # type: ignore[no-untyped-def]
        return "b" if longer(question) == "a" else "a"

    calibrated(quality_run, QualityStage.PREFERENCE, pick=longer)
    second = batch_publish(
        batch=batch_create(
            run=quality_run,
            stage=QualityStage.PREFERENCE,
            provider="local",
            assignments_per_hit=3,
        )
    )
    copy = Question.objects.get(hit__batch=second, item__kind__in=GOLD_KINDS).item
    assert copy.kind == GoldItemKind.PREFERENCE and copy.candidate2_id == copy.source.candidate2_id
    first_longer = (len(copy.candidate.text), copy.candidate.text) >= (
        len(copy.candidate2.text),
        copy.candidate2.text,
    )
    assert copy.target == (1.0 if first_longer else 0.0)
    [good] = answer_all(second, "good", longer)
    [bad] = answer_all(second, "bad", shorter)
    assert not Review.objects.filter(assignment_id=good).exists()
    [reason] = Review.objects.get(assignment_id=bad).reasons
    assert reason["expected"] == ["first" if first_longer else "second"]


def test_a_calibration_batch_takes_a_limited_number_of_items(quality_run, admin_client):
    """The console, the API and the command line make a stage's first batch small."""
    run = quality_run
    response = admin_client.post(
        f"/runs/{run.pk}/batches/new/",
        {
            "stage": QualityStage.BINARY,
            "provider": "local",
            "assignments_per_hit": 3,
            "limit": 4,
            "lifetime_hours": 24,
            "assignment_minutes": 30,
        },
    )
    assert response.status_code == 302, response.content[:400]
    first = run.batches.get()
    assert Question.objects.filter(hit__batch=first).count() == 4
    response = admin_client.post(
        f"/api/runs/{run.pk}/batches/",
        {"stage": QualityStage.RATING, "provider": "local", "limit": 3, "publish": False},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    assert Question.objects.filter(hit__batch_id=response.json()["id"]).count() == 3
    call_command(
        "create_batch",
        str(run.pk),
        "--stage",
        "quality-preference",
        "--provider",
        "local",
        "--limit",
        "2",
        "--assignments",
        "3",
        "--no-publish",
    )
    last = run.batches.get(stage=QualityStage.PREFERENCE)
    assert Question.objects.filter(hit__batch=last).count() == 2
    with pytest.raises(InputError) as caught:
        batch_create(run=run, stage=QualityStage.PREFERENCE, provider="local", limit=0)
    assert caught.value.field == "limit"


def test_gold_joins_only_hits_showing_none_of_its_images_in_an_image_disjoint_stage():
    """Issue 25: a gold copy showing an image its HIT already shows would link two
    questions; with `images` gold_place skips such copies (no database needed)."""
    from annotation.models import Item
    from annotation.services.runs.gold import item_images

    plans = [
        [Item(pk=1, positive_id=10, negative_id=11), Item(pk=2, positive_id=12, negative_id=13)],
        [Item(pk=3, positive_id=20, negative_id=21)],
    ]
    pool = [
        Item(pk=100 + n, positive_id=p, negative_id=q)
        for n, (p, q) in enumerate([(10, 30), (20, 31), (40, 41)])
    ]
    placed = gold_place(
        plans=[list(p) for p in plans],
        pools=[pool],
        draw=random.Random(0),
        per_hit=[2],
        images=item_images,
    )
    for plan in placed:
        shown = [pk for item in plan for pk in item_images(item)]
        assert len(shown) == len(set(shown))
    assert {i.pk for i in placed[0]} == {1, 2, 101, 102}
    assert {i.pk for i in placed[1]} == {3, 100, 102}


def test_only_a_stage_that_places_gold_keeps_gold_apart(paired_run):
    """The claim leaves the gold rule's subquery out where no HIT can hold a gold copy: a
    stage whose task type plans none (BISON's stage 2)."""
    from tests.factories import selection_done_factory

    selection = selection_done_factory(paired_run)
    assert not task_type_for(selection.stage).gold_kinds and not gold_kept_apart(selection)
    assert not Question.objects.filter(hit__batch=selection, item__kind__in=GOLD_KINDS).exists()
