"""Adaptive redundancy for caption-quality ratings and preferences in the app: follow-up
batches ask again only for the captions whose rating interval is too wide and the pairs whose
preference is neither decided nor pinned down; real PostgreSQL, simulated workers of the
realistic population."""

from collections import Counter

import pytest

from annotation.flows.quality.services.candidates import (
    quality_candidates_import,
    quality_run_create,
)
from annotation.flows.quality.vocabulary import QualityItemKind, QualityStage
from annotation.models import Answer, Question
from annotation.selectors.reviews.follow_ups import preference_counts, rating_intervals
from pipeline.errors import InputError
from pipeline.expectation import wilson
from tests.annotation.flows.quality.test_quality_flow import own_captions, results
from tests.annotation.flows.simulated_batch import answered_batch

pytestmark = pytest.mark.django_db

RATINGS = {"start": 3, "cap": 5, "half_width": 0.55}
PREFERENCES = {"start": 4, "cap": 12, "half_width": 0.2}


@pytest.fixture
def adaptive_run(dataset, tmp_path):
    run = quality_run_create(
        dataset=dataset,
        config={"pairs_per_image": 4, "adaptive": RATINGS, "adaptive_preference": PREFERENCES},
    )
    n = dataset.images.count()
    for model, texts in (("good", own_captions(dataset)), ("bad", ["a red car in a city"] * n)):
        path = results(tmp_path, dataset, model, texts)
        quality_candidates_import(run=run, model=model, path=str(path))
    return run


def judge(run, stage, *, more: bool, seed: int):
    # One item per HIT: HITs of several would keep two pairs of one image apart and leave
    # some for the next batch, which is the packing's rule, not this one's.
    return answered_batch(
        run,
        stage,
        items_per_hit=1,
        workers=30,
        population="realistic",
        seed=seed,
        more=more,
        id_prefix=f"sim-{stage}-{seed}",
    )


def asked(batch, kind) -> set[int]:
    return set(
        Question.objects.filter(hit__batch=batch, item__kind=kind).values_list("item", flat=True)
    )


def judgments(run, kind) -> Counter:
    return Counter(
        Answer.objects.filter(question__item__run=run, question__item__kind=kind).values_list(
            "question__item", flat=True
        )
    )


def wide_captions(run) -> set[int]:
    found = rating_intervals(run=run, stage=QualityStage.RATING, low=1, high=4)
    captions = set(judgments(run, QualityItemKind.CANDIDATE_CAPTION))
    return {
        item
        for item, (count, half) in found.items()
        if item in captions and half > RATINGS["half_width"] and count < RATINGS["cap"]
    }


def open_pairs(run) -> set[int]:
    """Pairs whose Wilson interval contains one half and is wider than the setting."""
    out = set()
    pairs = set(judgments(run, QualityItemKind.CANDIDATE_PAIR))  # not the gold copies
    counts = preference_counts(run=run, stage=QualityStage.PREFERENCE)
    for item, (first, total, spent) in counts.items():
        if item not in pairs:
            continue
        low, high = wilson(first, total)
        undecided = low <= 0.5 <= high and (high - low) / 2 > PREFERENCES["half_width"]
        if undecided and spent < PREFERENCES["cap"]:
            out.add(item)
    return out


def test_rating_follow_ups_ask_only_for_the_wide_captions(adaptive_run):
    run = adaptive_run
    first = judge(run, QualityStage.RATING, more=False, seed=1)
    assert first.assignments_per_hit == RATINGS["start"]
    captions = judgments(run, QualityItemKind.CANDIDATE_CAPTION)
    assert set(captions.values()) == {RATINGS["start"]}
    uncertain = wide_captions(run)
    assert 0 < len(uncertain) < len(captions)
    rounds = 0
    while True:
        try:
            batch = judge(run, QualityStage.RATING, more=True, seed=2 + rounds)
        except InputError as exc:
            assert exc.field == "more_judgments" and "no judged caption" in str(exc)
            break
        rounds += 1
        assert batch.assignments_per_hit == 1
        assert asked(batch, QualityItemKind.CANDIDATE_CAPTION) == uncertain
        uncertain = wide_captions(run)
        # Each round refits the workers, so a caption settled earlier may open again; the
        # cap still ends it.
        assert rounds <= RATINGS["cap"]
    assert rounds >= 1 and not uncertain
    assert max(judgments(run, QualityItemKind.CANDIDATE_CAPTION).values()) <= RATINGS["cap"]


def test_preference_follow_ups_ask_only_for_the_undecided_pairs(adaptive_run):
    run = adaptive_run
    first = judge(run, QualityStage.PREFERENCE, more=False, seed=1)
    assert first.assignments_per_hit == PREFERENCES["start"]
    pairs = judgments(run, QualityItemKind.CANDIDATE_PAIR)
    uncertain = open_pairs(run)
    assert 0 < len(uncertain) < len(pairs)  # a good against a bad caption is decided at once
    rounds = 0
    while True:
        try:
            batch = judge(run, QualityStage.PREFERENCE, more=True, seed=2 + rounds)
        except InputError as exc:
            assert exc.field == "more_judgments"
            break
        rounds += 1
        assert batch.assignments_per_hit == PREFERENCES["start"]  # rounds of `start`
        assert asked(batch, QualityItemKind.CANDIDATE_PAIR) == uncertain
        uncertain = open_pairs(run)
        assert rounds <= 2
    assert rounds >= 1 and not uncertain
    counts = judgments(run, QualityItemKind.CANDIDATE_PAIR)
    assert max(counts.values()) <= PREFERENCES["cap"]
    assert min(counts.values()) == PREFERENCES["start"]  # decided pairs were never asked again


@pytest.mark.parametrize(
    ("config", "field", "message"),
    [
        ({"adaptive": {"half_width": 3.5}}, "adaptive", r"within \(0, 3\]"),  # expert: 1-4
        ({"adaptive_preference": {"half_width": 0.5}}, "adaptive_preference", "within"),
        ({"adaptive_preference": {"start": 0}}, "adaptive_preference", "start <= cap"),
        ({"adaptive_preference": {"rounds": 2}}, "adaptive_preference", "'rounds'"),
    ],
)
def test_bad_adaptive_settings_name_their_field(dataset, config, field, message):
    with pytest.raises(InputError, match=message) as caught:
        quality_run_create(dataset=dataset, config=config)
    assert caught.value.field == field
