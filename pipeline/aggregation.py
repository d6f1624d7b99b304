"""Aggregating crowd labels beyond unanimity: majority vote, majority weighted by each
worker's reliability (from gold items), and Dawid-Skene (EM over per-worker confusion
matrices, Dawid & Skene 1979), on numpy.

Labels are integer classes 0..k-1 (an ordinal scale is passed as its classes: Dawid-Skene
then learns how each worker confuses neighbouring points). Input: flat arrays, one entry per
answer (item, worker, label). Output: the estimated class per item and its posterior.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from pipeline.errors import InputError


@dataclass(frozen=True)
class Aggregate:
    items: np.ndarray  # item ids, ascending
    labels: np.ndarray  # the estimated class of each item
    posterior: np.ndarray  # items x classes
    iterations: int = 0


def _check(items: np.ndarray, workers: np.ndarray, labels: np.ndarray, k: int) -> None:
    if not (items.shape == workers.shape == labels.shape) or items.ndim != 1:
        raise InputError(
            "items, workers and labels must be 1-D and the same length", field="labels"
        )
    if items.size == 0:
        raise InputError("no answers to aggregate", field="labels")
    if labels.min() < 0 or labels.max() >= k:
        raise InputError(f"labels must be classes 0..{k - 1}", field="labels")


def _counts(items: np.ndarray, labels: np.ndarray, weights: np.ndarray, k: int):  # type: ignore[no-untyped-def]
    ids, row = np.unique(items, return_inverse=True)
    table = np.zeros((ids.size, k))
    np.add.at(table, (row, labels), weights)
    return ids, row, table


def majority(items: np.ndarray, workers: np.ndarray, labels: np.ndarray, *, k: int) -> Aggregate:
    """Plain majority; ties go to the lowest class (deterministic)."""
    items, workers, labels = map(np.asarray, (items, workers, labels))
    _check(items, workers, labels, k)
    ids, _, table = _counts(items, labels, np.ones(items.size), k)
    post = table / table.sum(axis=1, keepdims=True)
    return Aggregate(items=ids, labels=post.argmax(axis=1), posterior=post)


def weighted_majority(
    items: np.ndarray,
    workers: np.ndarray,
    labels: np.ndarray,
    *,
    k: int,
    accuracy: Mapping[int, float],
    default_accuracy: float = 0.7,
) -> Aggregate:
    """Votes weighted by log-odds of each worker's accuracy (e.g. on gold items) against
    guessing among k classes; a worker at or below chance gets no weight."""
    items, workers, labels = map(np.asarray, (items, workers, labels))
    _check(items, workers, labels, k)
    acc = np.clip(
        np.array([accuracy.get(int(w), default_accuracy) for w in workers], dtype=np.float64),
        1e-3,
        1 - 1e-3,
    )
    weight = np.maximum(0.0, np.log(acc * (k - 1) / (1 - acc)))
    ids, _, table = _counts(items, labels, weight, k)
    total = table.sum(axis=1, keepdims=True)
    post = np.where(total > 0, table / np.where(total == 0, 1, total), 1.0 / k)
    return Aggregate(items=ids, labels=post.argmax(axis=1), posterior=post)


def dawid_skene(
    items: np.ndarray,
    workers: np.ndarray,
    labels: np.ndarray,
    *,
    k: int,
    iterations: int = 100,
    tolerance: float = 1e-6,
    smoothing: float = 0.01,
) -> Aggregate:
    """EM: class priors and one k x k confusion matrix per worker, started from majority
    vote; `smoothing` keeps unseen confusions from becoming zero probabilities."""
    items, workers, labels = map(np.asarray, (items, workers, labels))
    _check(items, workers, labels, k)
    ids, row = np.unique(items, return_inverse=True)
    wids, wrow = np.unique(workers, return_inverse=True)
    post = majority(items, workers, labels, k=k).posterior
    done = 0
    for step in range(1, iterations + 1):
        done = step
        # M step: priors and confusion matrices from the soft labels.
        prior = (post.sum(axis=0) + smoothing) / (post.sum() + smoothing * k)
        confusion = np.full((wids.size, k, k), smoothing)
        for true_class in range(k):  # confusion[worker, true class, answered] += P(class)
            cls = np.full(labels.size, true_class)
            np.add.at(confusion, (wrow, cls, labels), post[row, true_class])
        confusion /= confusion.sum(axis=2, keepdims=True)
        # E step: log posterior of each item's class.
        log = np.tile(np.log(prior), (ids.size, 1))
        np.add.at(log, row, np.log(confusion[wrow, :, labels]))
        log -= log.max(axis=1, keepdims=True)
        new = np.exp(log)
        new /= new.sum(axis=1, keepdims=True)
        change = float(np.abs(new - post).max())
        post = new
        if change < tolerance:
            break
    return Aggregate(items=ids, labels=post.argmax(axis=1), posterior=post, iterations=done)


def mace(
    items: np.ndarray,
    workers: np.ndarray,
    labels: np.ndarray,
    *,
    k: int,
    iterations: int = 100,
    tolerance: float = 1e-6,
    smoothing: float = 0.5,
) -> Aggregate:
    """MACE (Hovy et al. 2013): each worker either knows the answer (with probability
    theta_w, its competence) or spams, drawing a label from its own distribution xi_w, so
    P(answer a | class t) = theta_w [a = t] + (1 - theta_w) xi_w(a). Fitted by EM from the
    majority's soft labels, with a uniform prior over classes (as the paper's model) and
    `smoothing` pseudo-counts on theta (both ways) and on xi. Two parameters per worker
    instead of Dawid-Skene's k x k: it needs fewer answers per worker, and a worker who
    always says "yes" shows as a spammer with a skewed xi rather than as an expert."""
    items, workers, labels = map(np.asarray, (items, workers, labels))
    _check(items, workers, labels, k)
    ids, row = np.unique(items, return_inverse=True)
    wids, wrow = np.unique(workers, return_inverse=True)
    post = majority(items, workers, labels, k=k).posterior
    theta = np.full(wids.size, 0.8)
    xi = np.full((wids.size, k), 1.0 / k)
    done = 0
    for step in range(1, iterations + 1):
        done = step
        # M step. Given the item's class t, an answer a was "known" with probability
        # theta [a = t] / P(a | t): only when a = t can it be known.
        spam_a = (1 - theta[wrow]) * xi[wrow, labels]
        known = post[row, labels] * theta[wrow] / (theta[wrow] + spam_a)
        answered = np.bincount(wrow, minlength=wids.size)
        knows = np.bincount(wrow, weights=known, minlength=wids.size)
        theta = (knows + smoothing) / (answered + 2 * smoothing)
        spam = np.full((wids.size, k), smoothing)
        np.add.at(spam, (wrow, labels), 1 - known)
        xi = spam / spam.sum(axis=1, keepdims=True)
        # E step: log posterior of each item's class (uniform prior).
        log = np.zeros((ids.size, k))
        chance = np.log((1 - theta[wrow])[:, None] * xi[wrow, labels][:, None] + np.zeros(k))
        hit = np.log(theta[wrow] + (1 - theta[wrow]) * xi[wrow, labels])
        per_class = np.where(np.arange(k)[None, :] == labels[:, None], hit[:, None], chance)
        np.add.at(log, row, per_class)
        log -= log.max(axis=1, keepdims=True)
        new = np.exp(log)
        new /= new.sum(axis=1, keepdims=True)
        change = float(np.abs(new - post).max())
        post = new
        if change < tolerance:
            break
    return Aggregate(items=ids, labels=post.argmax(axis=1), posterior=post, iterations=done)
