"""Worker quality from agreement on non-gold items, and the Monte Carlo of every flow's rules
(pipeline/flow_quality.py) checked against the closed form where one exists."""

import random

import numpy as np
import pytest

from pipeline.expectation import eccv_expectation
from pipeline.flow_quality import eccv, figure_lines, flow_figures
from pipeline.simulate import POPULATIONS, WorkerProfile, respond
from pipeline.worker_quality import others_majority_agrees, others_mean_close, worker_agreement
from pipeline.world import World


def test_agreement_is_with_the_other_answers_only():
    items = np.array([1, 1, 1, 2, 2, 3])
    labels = np.array([0, 0, 1, 1, 0, 0])
    agrees = others_majority_agrees(items, labels, k=2)
    # Item 1: for each 0 the others are one 0 and one 1 (a tie: not compared); the 1 meets
    # two 0s. Item 2: two workers who disagree.
    assert np.isnan(agrees[0]) and np.isnan(agrees[1]) and agrees[2] == 0.0
    assert agrees[3] == 0.0 and agrees[4] == 0.0
    assert np.isnan(agrees[5])  # nobody else answered item 3
    close = others_mean_close(np.array([1, 1, 1]), np.array([2.0, 3.0, 5.0]), tolerance=1.0)
    assert close.tolist() == [0.0, 1.0, 0.0]  # 2 vs 4.0, 3 vs 3.5, 5 vs 2.5


def test_a_gold_aware_cheater_is_held_and_careful_workers_are_not():
    rng = random.Random(0)
    world = World(seed=0)
    team = [WorkerProfile(accuracy=0.95)] * 8 + [
        WorkerProfile(behaviour="gold_aware", gold_accuracy=1.0)
    ]
    items, workers, labels = [], [], []
    for i in range(600):
        truth = "yes" if world.unit("t", i) < 0.6 else "no"
        for w in rng.sample(range(len(team)), 3):
            items.append(i)
            workers.append(w)
            labels.append(int(respond(team[w], {truth}, ("yes", "no"), rng) == "no"))
    agrees = others_majority_agrees(np.array(items), np.array(labels), k=2)
    found = worker_agreement(workers, agrees, threshold=0.7, min_answers=10)
    assert found[8].held_after is not None and found[8].held_after < 60
    assert all(found[w].held_after is None for w in range(8))
    assert found[8].share < 0.6 < 0.85 < min(found[w].share for w in range(8))


def test_the_monte_carlo_of_eccv_majority_meets_the_closed_form():
    population = POPULATIONS["uniform-0.9"]
    seeds = range(4)
    figures = {f.measure: f for f in eccv(population, seeds, pairs=1500, team=30)}
    expected = [
        eccv_expectation(
            [1 + i % 5 for i in range(1500)],
            world=World(seed=s),
            mixture=population.groups,
            judgments=3,
        )
        for s in seeds
    ]
    for measure, value in (
        ("majority precision", np.mean([e.precision for e in expected])),
        ("majority recall", np.mean([e.recall for e in expected])),
    ):
        f = figures[measure]
        assert f.low - 0.003 <= value <= f.high + 0.003, (measure, value, f)


@pytest.mark.parametrize("name", ["realistic"])
def test_every_flow_is_reported_and_cheaters_are_followed(name):
    figures = flow_figures(POPULATIONS[name], seeds=2, items=300, team=30)
    by = {(f.flow, f.measure): f for f in figures}
    assert by[("cxc", "model: error vs latent")].value < by[("cxc", "mean: error vs latent")].value
    assert 0 < by[("eccv", "cheaters' share of kept answers")].value < 0.2
    assert by[("quality", "Bradley-Terry: ranking accuracy")].value > 0.8
    # Ratings asked for while the interval is wide: between the start (3) and the cap (7).
    assert 3 < by[("cxc", "adaptive: ratings per pair")].value < 7
    assert len(figure_lines(figures)) == len(figures) + 1


def test_adaptive_ratings_and_preferences_are_set_against_fixed():
    from pipeline.flow_quality import quality_preferences_adaptive, quality_ratings_adaptive

    prefs = {
        f.measure: f
        for f in quality_preferences_adaptive(POPULATIONS["realistic"], [0], pairs=80, team=30)
    }
    spent = prefs["adaptive 6-48 ±0.15: judgments per pair"].value
    assert 6 <= spent < 48 and prefs["fixed 48: judgments per pair"].value == 48
    assert prefs["fixed 6: judgments per pair"].value == 6
    # Asking more where the first six disagree names at least as many pairs right (seed 0).
    assert prefs["adaptive 6-48 ±0.15: pairs right"].value >= prefs["fixed 6: pairs right"].value
    ratings = {
        f.measure: f.value
        for f in quality_ratings_adaptive(POPULATIONS["realistic"], [0], captions=80, team=30)
    }
    assert ratings["fixed 3: ratings per caption"] == 3
    assert 3 < ratings["adaptive 3-7 ±0.5: ratings per caption"] <= 7


def test_the_hold_reads_the_same_wilson_bound_as_the_interval_it_reports():
    from pipeline.expectation import wilson
    from pipeline.worker_quality import _wilson_upper

    hits, total = np.array([0, 3, 7, 10, 37]), np.array([10, 10, 10, 10, 50])
    ours = _wilson_upper(hits, total)
    assert ours.tolist() == pytest.approx(
        [wilson(h, t)[1] for h, t in zip(hits, total, strict=True)]
    )
