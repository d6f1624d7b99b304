"""Aggregation methods on data with known answers."""

import numpy as np
import pytest

from pipeline.aggregation import dawid_skene, mace, majority, weighted_majority
from pipeline.errors import InputError


def crowd(seed, n_items=400, k=2, good=6, spammers=4, accuracy=0.8, per_item=5):
    """Items with a hidden true class; good workers right with `accuracy` (errors uniform over
    the other classes), spammers always answer class 0 (an always-YES worker)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(k, size=n_items)
    items, workers, labels = [], [], []
    for item in range(n_items):
        for w in rng.choice(good + spammers, size=per_item, replace=False):
            if w < good:
                right = rng.random() < accuracy
                label = (
                    truth[item] if right else rng.choice([c for c in range(k) if c != truth[item]])
                )
            else:
                label = 0
            items.append(item)
            workers.append(int(w))
            labels.append(int(label))
    return truth, np.array(items), np.array(workers), np.array(labels)


def precision(result, truth):
    return float(np.mean(result.labels == truth[result.items]))


def oracle(items, workers, labels, truth):
    """The Bayes-optimal answer knowing every worker's true behaviour (the crowd() model)."""
    n = items.max() + 1
    log = np.zeros((n, 2))
    for i, w, lab in zip(items, workers, labels, strict=True):
        if w < 6:
            log[i] += np.log(np.where(np.arange(2) == lab, 0.8, 0.2))
        # a spammer's answer (always 0) says nothing about the class
    return float(np.mean(log.argmax(axis=1) == truth))


def test_dawid_skene_beats_majority_with_spammers_and_nears_the_oracle():
    scores = {"majority": [], "weighted": [], "ds": [], "oracle": []}
    for seed in range(5):
        truth, items, workers, labels = crowd(seed)
        gold = {w: (0.8 if w < 6 else 0.5) for w in range(10)}  # as measured on gold items
        scores["majority"].append(precision(majority(items, workers, labels, k=2), truth))
        scores["weighted"].append(
            precision(weighted_majority(items, workers, labels, k=2, accuracy=gold), truth)
        )
        scores["ds"].append(precision(dawid_skene(items, workers, labels, k=2), truth))
        scores["oracle"].append(oracle(items, workers, labels, truth))
    mean = {k: float(np.mean(v)) for k, v in scores.items()}
    assert mean["ds"] > mean["majority"] + 0.05
    assert mean["weighted"] > mean["majority"] + 0.05
    assert mean["ds"] > mean["oracle"] - 0.03  # close to the best any method can do


def test_dawid_skene_on_an_ordinal_scale_recovers_the_truth():
    truth, items, workers, labels = crowd(7, k=4, spammers=2, accuracy=0.75)
    result = dawid_skene(items, workers, labels, k=4)
    assert precision(result, truth) > precision(majority(items, workers, labels, k=4), truth)
    assert np.allclose(result.posterior.sum(axis=1), 1.0)


def test_perfect_workers_agree_with_every_method():
    truth, items, workers, labels = crowd(1, spammers=0, accuracy=1.0)
    for method in (majority, dawid_skene, mace):
        assert precision(method(items, workers, labels, k=2), truth) == 1.0


def test_bad_input_is_refused():
    with pytest.raises(InputError):
        majority(np.array([0]), np.array([0]), np.array([3]), k=2)
    with pytest.raises(InputError):
        dawid_skene(np.array([]), np.array([]), np.array([]), k=2)


def test_mace_reads_always_yes_workers_as_spammers_and_nears_the_oracle():
    scores = {"majority": [], "mace": [], "oracle": []}
    for seed in range(5):
        truth, items, workers, labels = crowd(seed)
        scores["majority"].append(precision(majority(items, workers, labels, k=2), truth))
        scores["mace"].append(precision(mace(items, workers, labels, k=2), truth))
        scores["oracle"].append(oracle(items, workers, labels, truth))
    mean = {k: float(np.mean(v)) for k, v in scores.items()}
    assert mean["mace"] > mean["majority"] + 0.05
    assert mean["mace"] > mean["oracle"] - 0.03
    truth, items, workers, labels = crowd(9, k=4, accuracy=0.75)
    result = mace(items, workers, labels, k=4)
    assert precision(result, truth) > precision(majority(items, workers, labels, k=4), truth)
    assert np.allclose(result.posterior.sum(axis=1), 1.0)
