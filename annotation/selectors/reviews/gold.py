"""Which items a run has established: real items of earlier batches whose counted answers
agree, so a copy of one can serve as gold that looks exactly like the real items around it
(`annotation/services/runs/gold.py` makes and places the copies).

Gold taken from published labels (CxC's ratings, ECCV Caption's original pairs) can be looked
up by anyone holding the public files; an item whose answer only this run's workers gave
cannot. Categorical answers agree when a large enough share of distinct workers gave the same
class; ratings agree when their spread (highest minus lowest) is small enough."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace

from django.db.models import QuerySet

from annotation.models import GOLD_KINDS, Answer, Item, Run
from annotation.selectors.counting import counted_reviewed


@dataclass(frozen=True)
class Established:
    """A real item whose answer the run established: `answers` distinct workers' counted
    answers; the agreed class (categorical) or the mean rating (ratings)."""

    item_id: int
    answers: int
    label: str = ""
    mean: float | None = None

    @property
    def stratum(self) -> str:
        """What the answer is, coarsely: the class, or the rating rounded to a point."""
        return self.label if self.mean is None else str(round(self.mean))


@dataclass(frozen=True)
class Agreement:
    """When answers establish an item. Categorical (`spread` None): at least `min_answers`
    distinct workers and at least `share` of them in one class (`classes` maps a label to its
    class, e.g. ECCV's four levels to positive/negative; unmapped labels are their own class).
    Ratings (`spread` set): at least `min_answers` numeric answers, highest minus lowest at
    most `spread`."""

    min_answers: int = 3
    share: float = 1.0
    spread: float | None = None
    classes: Mapping[str, str] | None = None


@dataclass(frozen=True)
class StageConsensus:
    """The established items of a stage, and how the answers of all its judged items spread
    over strata (each item's majority class or rounded mean rating, as a share of the items):
    gold is dealt in these shares, so that what a gold question asks for is no more
    predictable than what any other question asks for."""

    established: list[Established]
    shares: dict[str, float]


def stage_consensus(
    *,
    run: Run,
    stage: str,
    agreement: Agreement,
    among: QuerySet[Item] | None = None,
) -> StageConsensus:
    """The real items of `run` answered in `stage` whose counted answers (held work left out)
    meet `agreement`, in item order, and the strata shares of every judged real item; `among`
    narrows the items (e.g. one ECCV direction). A worker who answered an item twice counts
    once, with their first answer."""
    rows = Answer.objects.filter(
        counted_reviewed(""),
        question__item__run=run,
        question__hit__batch__stage=stage,
    ).exclude(question__item__kind__in=GOLD_KINDS)
    if among is not None:
        rows = rows.filter(question__item__in=among.values("pk"))
    labels: dict[int, dict[int, str]] = defaultdict(dict)
    for item, worker, label in rows.order_by("pk").values_list(
        "question__item_id", "assignment__worker_id", "label"
    ):
        labels[item].setdefault(worker, label)
    decide = _rating if agreement.spread is not None else _categorical
    # Every judged item's own consensus (however few answers) says what real items ask for.
    anything = Agreement(min_answers=1, share=0.0, spread=99.0 if agreement.spread else None)
    established, strata = [], Counter[str]()
    for item in sorted(labels):
        answers = list(labels[item].values())
        found = decide(item, answers, agreement)
        if found is not None:
            established.append(found)
        loose = decide(item, answers, replace(anything, classes=agreement.classes))
        if loose is not None:
            strata[loose.stratum] += 1
    total = sum(strata.values())
    return StageConsensus(
        established=established, shares={k: n / total for k, n in sorted(strata.items())}
    )


def items_established(
    *,
    run: Run,
    stage: str,
    agreement: Agreement,
    among: QuerySet[Item] | None = None,
) -> list[Established]:
    """`stage_consensus`'s established items."""
    return stage_consensus(run=run, stage=stage, agreement=agreement, among=among).established


def _categorical(item: int, labels: list[str], rule: Agreement) -> Established | None:
    if len(labels) < rule.min_answers:
        return None
    classes = rule.classes or {}
    counts: dict[str, int] = defaultdict(int)
    for label in labels:
        counts[classes.get(label, label)] += 1
    top, n = max(sorted(counts.items()), key=lambda kv: kv[1])
    # Ties never establish: two classes each holding half is no agreement.
    if n / len(labels) < rule.share or list(counts.values()).count(n) > 1:
        return None
    return Established(item_id=item, answers=len(labels), label=top)


def _rating(item: int, labels: list[str], rule: Agreement) -> Established | None:
    values = [_number(v) for v in labels]
    numbers = [v for v in values if v is not None]
    if len(numbers) < rule.min_answers:
        return None
    assert rule.spread is not None
    if max(numbers) - min(numbers) > rule.spread:
        return None
    return Established(item_id=item, answers=len(numbers), mean=sum(numbers) / len(numbers))


def _number(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def worker_gold_tally(run: Run) -> dict[int, tuple[int, int]]:
    """Per worker (Worker pk): right and total counted answers on the run's gold questions,
    each judged by its stage's task type (`TaskType.gold_passed`)."""
    from annotation.tasktypes import task_type_for

    rows = list(
        Answer.objects.filter(
            counted_reviewed(""), question__item__run=run, question__item__kind__in=GOLD_KINDS
        )
        .order_by("pk")
        .values_list(
            "assignment__worker_id", "question__item_id", "question__hit__batch__stage", "label"
        )
    )
    items = Item.objects.select_related("run").in_bulk({item for _, item, _, _ in rows})
    tally: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for worker, item, stage, label in rows:
        passed = task_type_for(stage).gold_passed(item=items[item], label=label)
        if passed is None:
            continue
        tally[worker][0] += bool(passed)
        tally[worker][1] += 1
    return {w: (right, total) for w, (right, total) in tally.items()}
