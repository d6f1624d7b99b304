"""The latent world, worker populations and the closed-form expectations, checked against
Monte Carlo runs of the same answer rules."""

import random
from collections import Counter

import pytest

from pipeline.errors import InputError
from pipeline.expectation import bison_expectation, eccv_expectation, wilson
from pipeline.simulate import POPULATIONS, Population, WorkerProfile, population_named, respond
from pipeline.world import ECCV_LEVELS, World, deconvolve, table_b2_shares

CHOICES = ("left", "right", "both", "neither")


def test_latent_values_are_fixed_by_seed_and_item_only():
    a, b = World(seed=1), World(seed=2)
    assert [a.unit("x", i) for i in range(5)] == [World(seed=1).unit("x", i) for i in range(5)]
    assert [a.unit("x", i) for i in range(5)] != [b.unit("x", i) for i in range(5)]
    assert a.bison_discriminable(3, 9) == a.bison_discriminable(9, 3)  # a property of the pair


def test_bison_pairs_are_discriminable_at_the_configured_share_with_a_valid_caption():
    world = World(seed=0)
    captions = [101, 102, 103, 104, 105]
    valid = [world.bison_valid_captions(i, i + 50_000, captions) for i in range(20_000)]
    share = sum(1 for v in valid if v) / len(valid)
    assert abs(share - 0.92) < 0.01
    per_caption = sum(len(v) for v in valid if v) / sum(5 for v in valid if v)
    expected = 0.6 + 0.4**5 / 5  # each caption valid at 0.6, one always when none drew
    assert abs(per_caption - expected) < 0.01


def test_table_b2_means_and_the_calibration_reproduce_the_papers_shares():
    rank1 = table_b2_shares(1)
    assert abs(rank1[0] + rank1[1] - 0.8414) < 0.001  # "exceed 80 % for all five models"
    assert table_b2_shares(9) == table_b2_shares(5)
    latent = deconvolve(rank1, 0.9)
    assert latent[0] > rank1[0] and latent[3] < rank1[3]
    # Workers of accuracy 0.9 answering the latent labels report Table B.2's shares.
    world, rng = World(seed=4), random.Random(0)
    profile = WorkerProfile(accuracy=0.9)
    seen = Counter(
        respond(profile, {ECCV_LEVELS[world.eccv_label(i, i, rank=1)]}, ECCV_LEVELS, rng)
        for i in range(40_000)
    )
    for level, paper in zip(ECCV_LEVELS, rank1, strict=True):
        assert abs(seen[level] / 40_000 - paper) < 0.01, level


def test_a_careful_worker_is_right_at_its_accuracy_and_errs_only_to_other_answers():
    rng = random.Random(1)
    profile = WorkerProfile(accuracy=0.9)
    answers = Counter(respond(profile, {"left"}, CHOICES, rng) for _ in range(30_000))
    assert abs(answers["left"] / 30_000 - 0.9) < 0.01
    for other in ("right", "both", "neither"):
        assert abs(answers[other] / 30_000 - 0.1 / 3) < 0.006
    spammer = WorkerProfile(behaviour="constant")
    assert {respond(spammer, {"no"}, ECCV_LEVELS, rng, constant="yes") for _ in range(50)} == {
        "yes"
    }
    gold = WorkerProfile(accuracy=0.6)
    assert gold.gold == 0.6 and WorkerProfile(accuracy=0.6, gold_accuracy=1.0).gold == 1.0


def test_populations_split_teams_in_their_shares_and_mix_every_prefix():
    mixed = POPULATIONS["mixed"]
    assert mixed.counts(10) == [7, 2, 1]
    team = mixed.profiles(10, seconds_per_answer=5.0)
    assert Counter(p.label() for p in team) == {
        "accuracy 0.9": 7,
        "accuracy 0.7": 2,
        "random spammer": 1,
    }
    assert len({p.label() for p in team[:3]}) == 3
    assert all(p.seconds_per_answer == 5.0 for p in team)
    assert population_named("uniform-0.8").groups[0][1].accuracy == 0.8
    with pytest.raises(InputError, match="unknown population"):
        population_named("uniform-2")
    with pytest.raises(InputError, match="sum to 1"):
        Population("bad", ((0.5, WorkerProfile()),))


def _simulate_bison(world, team2, team3, pairs, verifiers, rng):
    """The answer rules of annotation/flows/bison/simulate.py without the database."""
    made = {"valid": 0, "invalid": 0, "verified_valid": 0, "verified_invalid": 0}
    for i in range(pairs):
        captions = [10 * i + k for k in range(5)]
        valid = world.bison_valid_captions(i, i + 10**6, captions)
        choices = [str(c) for c in captions] + ["none"]
        answer = respond(rng.choice(team2), {str(c) for c in valid} or {"none"}, choices, rng)
        if answer == "none":
            continue
        ok = int(answer) in valid
        made["valid" if ok else "invalid"] += 1
        side = rng.choice(["left", "right"])
        verifiers_ = rng.sample(team3, verifiers)
        votes = [
            respond(w, {side} if ok else {"both"}, CHOICES, rng, constant="left")
            for w in verifiers_
        ]
        if all(v == side for v in votes):
            made["verified_valid" if ok else "verified_invalid"] += 1
    return made


@pytest.mark.parametrize("name", ["uniform-0.9", "mixed", "yes-spammers"])
def test_bison_closed_form_matches_a_monte_carlo_of_the_same_rules(name):
    population = POPULATIONS[name]
    world, rng = World(seed=7), random.Random(3)
    team = population.profiles(100)
    made = _simulate_bison(world, team, team, 20_000, 2, rng)
    expected = bison_expectation(
        [5] * 20_000,
        world=world,
        stage2=population.groups,
        stage3=population.groups,
        verifiers=2,
        stage3_team=100,
    )
    for key, value in (
        ("valid", expected.triples_valid),
        ("invalid", expected.triples_invalid),
        ("verified_valid", expected.verified_valid),
    ):
        assert abs(made[key] - value) < 4 * value**0.5 + 5, (key, made[key], value)
    verified = made["verified_valid"] + made["verified_invalid"]
    low, high = wilson(made["verified_valid"], verified, z=3.0)  # several checks: 3 sigma
    assert low <= expected.precision <= high


def test_verified_bison_precision_reaches_99_percent_with_90_percent_workers():
    uniform = POPULATIONS["uniform-0.9"].groups
    expected = bison_expectation(
        [5] * 1000, world=World(), stage2=uniform, stage3=uniform, verifiers=2
    )
    assert expected.precision >= 0.99
    mixed = POPULATIONS["mixed"].groups
    worse = bison_expectation([5] * 1000, world=World(), stage2=mixed, stage3=mixed, verifiers=2)
    assert worse.precision < expected.precision


def test_eccv_closed_form_matches_a_monte_carlo_of_majority_votes():
    world, rng = World(seed=2), random.Random(5)
    population = POPULATIONS["mixed"]
    team = population.profiles(50)
    ranks = [1 + i % 5 for i in range(15_000)]
    tp = fp = positives = 0
    for i, rank in enumerate(ranks):
        truth = world.eccv_label(i, i, rank=rank) <= 1
        positives += truth
        answers = [
            respond(w, {ECCV_LEVELS[world.eccv_label(i, i, rank=rank)]}, ECCV_LEVELS, rng)
            for w in rng.sample(team, 3)
        ]
        said = sum(a in ("yes", "partially_yes") for a in answers)
        if said >= 2:
            tp += truth
            fp += not truth
    expected = eccv_expectation(ranks, world=world, mixture=population.groups, judgments=3)
    low, high = wilson(tp, tp + fp)
    assert low <= expected.precision <= high
    low, high = wilson(tp, positives)
    assert low <= expected.recall <= high


def test_wilson_interval():
    assert wilson(0, 0) == (0.0, 1.0)
    low, high = wilson(95, 100)
    assert 0.88 < low < 0.95 < high < 0.98


def test_eccv_expectation_takes_each_pairs_own_number_of_judgments():
    """A calibration batch judges some pairs three times, the rest once: the expectation of
    the whole is the sum of each part's, not either count applied to all."""
    world = World(seed=3)
    mixture = population_named("mixed").groups
    ranks = [1, 2, 3, 4, 5, None, 0] * 20
    counts = [3] * 70 + [1] * 70
    both = eccv_expectation(ranks, world=world, mixture=mixture, judgments=counts)
    three = eccv_expectation(ranks[:70], world=world, mixture=mixture, judgments=3)
    one = eccv_expectation(ranks[70:], world=world, mixture=mixture, judgments=1)
    assert both.called_true == pytest.approx(three.called_true + one.called_true)
    assert both.called_false == pytest.approx(three.called_false + one.called_false)
    assert both.positive == pytest.approx(three.positive + one.positive)
    with pytest.raises(ValueError):
        eccv_expectation(ranks, world=world, mixture=mixture, judgments=[1, 3])
