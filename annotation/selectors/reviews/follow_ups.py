"""Which judged items an adaptive run asks again (ratings and preferences; ECCV's binary
judgments have their own in `flows/eccv/selectors.py`): those whose interval the run's policy
(`pipeline.redundancy_scales`) still finds too wide, below its cap, and not already waiting
in an open HIT. Flow-neutral: a flow passes its stage, the items that may be asked again and
its policy."""

from __future__ import annotations

from collections import Counter

import numpy as np
from django.db.models import QuerySet

from annotation.models import Answer, GoldItemKind, Item, Run
from annotation.selectors.counting import counted_reviewed
from pipeline.redundancy_scales import PreferenceRedundancy, RatingRedundancy


def _answers(
    run: Run, stage: str, *, gold: bool = True
) -> tuple[list[tuple[int, int, str]], Counter[int]]:
    """(item, worker, label) of the stage's counted answers, a worker's first answer per item
    only (a second rating by the same worker adds no independent evidence), and every answer
    per item, counted or not (held, excluded or rejected work was asked for too: the cap
    bounds what is asked); `gold=False` leaves gold items out."""
    stage_answers = Answer.objects.filter(question__item__run=run).filter(
        question__hit__batch__stage=stage
    )
    if not gold:
        stage_answers = stage_answers.exclude(question__item__kind__in=GoldItemKind.values)
    rows = (
        stage_answers.filter(counted_reviewed())
        .order_by("pk")
        .values_list("question__item_id", "assignment__worker_id", "label")
    )
    spent: Counter[int] = Counter(stage_answers.values_list("question__item_id", flat=True))
    seen: set[tuple[int, int]] = set()
    out = []
    for item, worker, label in rows:
        if (item, worker) not in seen:
            seen.add((item, worker))
            out.append((item, worker, label))
    return out, spent


def _waiting(run: Run, stage: str) -> set[int]:
    """Items with a question still unanswered in an open HIT of the stage."""
    return set(
        Item.objects.filter(run=run, questions__hit__batch__stage=stage)
        .filter(questions__answers__isnull=True, questions__hit__status="open")
        .values_list("pk", flat=True)
    )


def rating_intervals(
    *, run: Run, stage: str, low: float, high: float
) -> dict[int, tuple[int, float]]:
    """Per rated item of the stage, gold left out: (ratings spent, 95 % interval half-width)
    under the per-worker scale model, fitted on the stage's counted ratings of those items,
    the fit the simulation's rule (`pipeline.flow_quality.adaptive_ratings_seed`) and the
    quality sweep read. Gold copies are left out because they are pairs the raters already
    agreed on, answered as gold: fitted in, they made the raters look steadier and the
    intervals narrower than the items' own ratings say (issue 30)."""
    from pipeline.scales import rating_model  # scipy: only when asked

    rows, spent = _answers(run, stage, gold=False)
    if not rows:
        return {}
    items, workers, labels = zip(*rows, strict=True)
    est = rating_model(
        np.array(items), np.array(workers), np.array(labels, dtype=np.float64), low=low, high=high
    )
    half = (est.high - est.low) / 2
    return {int(i): (spent[int(i)], float(h)) for i, h in zip(est.items, half, strict=True)}


def rating_follow_ups(
    *,
    run: Run,
    stage: str,
    items: QuerySet[Item],
    policy: RatingRedundancy,
    low: float,
    high: float,
) -> list[int]:
    """Judged items of `items` whose rating interval is still wider than the policy's."""
    wanted = set(items.values_list("pk", flat=True))
    waiting = _waiting(run, stage)
    return sorted(
        item
        for item, (count, half) in rating_intervals(
            run=run, stage=stage, low=low, high=high
        ).items()
        if item in wanted and item not in waiting and policy.needs_more(count, half)
    )


def preference_counts(*, run: Run, stage: str) -> dict[int, tuple[int, int, int]]:
    """Per judged pair of the stage: (judgments for the first caption, judgments, judgments
    spent); a worker's second judgment of a pair counts in the spent ones only."""
    first: Counter[int] = Counter()
    total: Counter[int] = Counter()
    rows, spent = _answers(run, stage)
    for item, _, label in rows:
        first[item] += label == "first"
        total[item] += 1
    return {item: (first[item], n, spent[item]) for item, n in total.items()}


def preference_follow_ups(
    *, run: Run, stage: str, items: QuerySet[Item], policy: PreferenceRedundancy
) -> list[int]:
    """Judged pairs of `items` whose preference is neither decided nor pinned down yet."""
    wanted = set(items.values_list("pk", flat=True))
    waiting = _waiting(run, stage)
    return sorted(
        item
        for item, (first, total, spent) in preference_counts(run=run, stage=stage).items()
        if item in wanted and item not in waiting and policy.needs_more(first, total, spent)
    )
