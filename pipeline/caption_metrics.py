"""Caption scores from a shared image-text embedding space and their agreement with people.

CLIP-S (Hessel et al.) and PAC-S (Sarto et al., Eq. 1): w * max(cos(image, candidate), 0),
with w = 2.5 for CLIP-S and w = 2.0 for PAC-S. The reference-based versions (RefCLIP-S,
RefPAC-S, Eq. 4) are the harmonic mean of that score and max(0, the best cosine between the
candidate and a reference caption). The embeddings are the user's (`.npz`); nothing here
computes them. Agreement with people: Kendall's tau-b and tau-c (scipy's `kendalltau`), and
for pairwise preferences the share of pairs where the metric prefers the caption people
preferred, per category (HC, HI, HM, MM). On Pascal-50S a reference-based metric sees five
references drawn at random from the pair's 48, and the accuracy is the mean of five such draws
(PAC-S Table 4, following CLIP-S): `reference_draws`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from pipeline.errors import InputError
from pipeline.neighbours import normalize_rows

CLIP_S_W = 2.5
PAC_S_W = 2.0
CATEGORIES = ("HC", "HI", "HM", "MM")
PASCAL_DRAWS = 5  # random draws of references, accuracy averaged over them (PAC-S Table 4)
PASCAL_REFERENCES = 5  # references per pair in each draw


def _unit(x: np.ndarray, field: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2 or not np.isfinite(a).all():
        raise InputError("must be a finite 2-D array", field=field)
    return normalize_rows(a)


def reference_free(image: np.ndarray, candidate: np.ndarray, *, w: float) -> np.ndarray:
    """w * max(cos, 0) row by row (image i with candidate i)."""
    a, b = _unit(image, "image"), _unit(candidate, "candidate")
    if a.shape != b.shape:
        raise InputError(
            f"{a.shape[0]} image rows of width {a.shape[1]} for {b.shape[0]} candidates of width "
            f"{b.shape[1]}: need one image row per candidate, same width",
            field="candidate",
        )
    return w * np.maximum(np.einsum("ij,ij->i", a, b), 0.0)


def reference_based(
    score: np.ndarray, candidate: np.ndarray, references: Sequence[np.ndarray]
) -> np.ndarray:
    """Harmonic mean of a reference-free `score` and max(0, best cosine with a reference)."""
    c = _unit(candidate, "candidate")
    out = np.zeros(len(c))
    for i, refs in enumerate(references):
        r = _unit(refs, "references")
        best = max(0.0, float(np.max(r @ c[i]))) if len(r) else 0.0
        s = float(score[i])
        out[i] = 0.0 if s + best == 0 else 2 * s * best / (s + best)
    return out


def kendall(
    metric: Sequence[float] | np.ndarray, human: Sequence[float] | np.ndarray, *, variant: str
) -> float:
    from scipy.stats import kendalltau  # loaded when used: slow to import

    if variant not in ("b", "c"):
        raise InputError("must be 'b' or 'c'", field="variant")
    m, h = np.asarray(metric, dtype=np.float64), np.asarray(human, dtype=np.float64)
    if m.shape != h.shape or m.size < 2:
        raise InputError(
            f"need as many metric scores as judgments (at least 2), got {m.size} and {h.size}",
            field="metric",
        )
    if not np.isfinite(m).all():
        raise InputError("metric scores hold NaN or infinite values", field="metric")
    return float(kendalltau(m, h, variant=variant).statistic)


def pairwise_accuracy(
    score_a: Sequence[float] | np.ndarray,
    score_b: Sequence[float] | np.ndarray,
    prefer_a: Sequence[float],
    categories: Sequence[str],
) -> dict[str, float]:
    """Per category (and "mean" over the categories present): the share of pairs where the
    metric prefers the caption most people preferred (`prefer_a`: the share of people who
    chose A; a tie among people, or in the metric, counts one half)."""
    hits: dict[str, list[float]] = defaultdict(list)
    for a, b, p, cat in zip(score_a, score_b, prefer_a, categories, strict=True):
        if cat not in CATEGORIES:
            raise InputError(
                f"must be one of {', '.join(CATEGORIES)}, got {cat!r}", field="category"
            )
        people = "tie" if p == 0.5 else ("a" if p > 0.5 else "b")
        metric = "tie" if a == b else ("a" if a > b else "b")
        hits[cat].append(0.5 if "tie" in (people, metric) else float(people == metric))
    out = {cat: round(100.0 * float(np.mean(v)), 2) for cat, v in sorted(hits.items())}
    if out:
        out["mean"] = round(float(np.mean(list(out.values()))), 2)
    return out


def reference_draws(
    references: Sequence[Sequence[str]],
    *,
    draws: int = PASCAL_DRAWS,
    per_draw: int = PASCAL_REFERENCES,
    seed: int = 0,
) -> list[list[tuple[str, ...]]]:
    """For each of `draws` seeded draws, `per_draw` of each pair's references picked at random
    without replacement, in their given order (all of them where a pair has fewer)."""
    if draws < 1 or per_draw < 1:
        raise InputError("draws and references per draw must be at least 1", field="draws")
    rng = np.random.default_rng(seed)
    out: list[list[tuple[str, ...]]] = []
    for _ in range(draws):
        drawn = []
        for refs in references:
            if len(refs) <= per_draw:
                drawn.append(tuple(refs))
                continue
            picked = np.sort(rng.choice(len(refs), size=per_draw, replace=False))
            drawn.append(tuple(refs[int(i)] for i in picked))
        out.append(drawn)
    return out


def mean_accuracy(per_draw: Sequence[dict[str, float]]) -> dict[str, float]:
    """The per-category accuracies of several draws, averaged (categories of the first draw)."""
    return {k: round(float(np.mean([d[k] for d in per_draw])), 2) for k in per_draw[0]}
