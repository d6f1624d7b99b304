"""Gold a cheater cannot recognise: copies of the run's own established items.

A flow's task type asks, while planning a batch's HITs, for the items earlier batches of the
same stage established (`annotation/selectors/reviews/gold.py`), turns each into a gold copy (an
`Item` of a gold kind that shows exactly what the real item showed: same images, captions and
candidates, with the agreed answer as its target) and places copies into the HITs at
positions drawn from a secret source. Nothing on a worker's page tells a copy from the real
items around it: it is one of them, drawn from the same batches. Its answer comes from this
run's workers, never from a published file, so holding the published labels helps on gold no
more than on any other item.

A worker never gets a HIT holding a copy of an item they had before (`assignment_claim_next`:
`gold_seen_before`), so remembering earlier batches does not reveal gold either. The first
batch of a stage has nothing established to copy: it has no gold (its task type's
`publish_warnings` says so).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from django.db.models import Exists, OuterRef, Q, QuerySet

from annotation.flow_registry import task_type_for
from annotation.models import GOLD_KINDS, Batch, Item, Question, Run, Worker
from annotation.run_settings import ESTABLISHED as ESTABLISHED  # gold sources, declared there
from annotation.run_settings import GOLD_SOURCES as GOLD_SOURCES
from annotation.run_settings import PAPER as PAPER
from annotation.run_settings import run_settings
from annotation.selectors.reviews.gold import Agreement, Established, stage_consensus

# The fields a copy shares with its source: everything a task page can show.
SHOWN_FIELDS = ("positive_id", "negative_id", "caption_id", "caption2_id", "candidate_id")
COPIED_FIELDS = (*SHOWN_FIELDS, "candidate2_id", "tag")


def gold_source(run: Run) -> str:
    """The run's gold source; a run whose config predates the setting keeps the paper's."""
    return run_settings(run).gold_source


def gold_agreement(run: Run, *, classes: dict[str, str] | None = None, ratings: bool) -> Agreement:
    """The run's rule for when answers establish an item."""
    settings = run_settings(run)
    return Agreement(
        min_answers=settings.gold_min_answers,
        share=settings.gold_agreement,
        spread=settings.gold_spread if ratings else None,
        classes=classes,
    )


@dataclass(frozen=True)
class GoldKind:
    """What an established item's copy is: its kind and target (a rating's mean, or None)."""

    kind: str
    target: float | None = None


@dataclass(frozen=True)
class GoldCopies:
    """Gold copies by kind, and each copy's weight when dealt (by pk): its stratum's share
    among the stage's judged items over its share among the copies, so gold asks for each
    kind of answer as often as the real items do (agreement favours clear-cut items)."""

    by_kind: dict[str, list[Item]]
    weight: dict[int, float]


def gold_copies_create(
    *,
    run: Run,
    stage: str,
    agreement: Agreement,
    kind_of: Callable[[Established], GoldKind | None],
    among: QuerySet[Item] | None = None,
    exclude: Iterable[int] = (),
) -> GoldCopies:
    """Gold copies of the items `stage` established (`stage_consensus`), made once per
    source and kind and reused by later batches (their target follows the current
    consensus). `kind_of` maps a consensus to the copy's kind (None: not usable as gold);
    items in `exclude` (the batch's own real items) are left out, so a batch never shows one
    item twice."""
    skip = set(exclude)
    consensus = stage_consensus(run=run, stage=stage, agreement=agreement, among=among)
    chosen: list[tuple[Established, GoldKind]] = []
    for found in consensus.established:
        what = kind_of(found) if found.item_id not in skip else None
        if what is not None:
            chosen.append((found, what))
    if not chosen:
        return GoldCopies(by_kind={}, weight={})
    sources = Item.objects.in_bulk([found.item_id for found, _ in chosen])
    Item.objects.bulk_create(
        [
            Item(
                run=run,
                kind=what.kind,
                source_id=found.item_id,
                target=what.target,
                **{f: getattr(sources[found.item_id], f) for f in COPIED_FIELDS},
            )
            for found, what in chosen
        ],
        ignore_conflicts=True,  # made by an earlier batch (or a concurrent one)
    )
    copies = {
        (c.source_id, c.kind): c
        for c in Item.objects.filter(
            run=run, source_id__in=[f.item_id for f, _ in chosen], kind__in=GOLD_KINDS
        )
    }
    strata = Counter(found.stratum for found, _ in chosen)
    by_kind: dict[str, list[Item]] = {}
    weight: dict[int, float] = {}
    for found, what in chosen:
        copy = copies[(found.item_id, what.kind)]
        if copy.target != what.target:
            Item.objects.filter(pk=copy.pk).update(target=what.target)
            copy.target = what.target
        by_kind.setdefault(what.kind, []).append(copy)
        stratum = found.stratum
        weight[copy.pk] = consensus.shares.get(stratum, 0.0) * len(chosen) / strata[stratum]
    return GoldCopies(by_kind=by_kind, weight=weight)


def gold_place(
    *,
    plans: list[list[Item]],
    pools: Sequence[Sequence[Item]],
    draw: random.Random,
    per_hit: Sequence[int] | None = None,
    weight: dict[int, float] | None = None,
    images: Callable[[Item], frozenset[int]] | None = None,
) -> list[list[Item]]:
    """Put `per_hit[n]` items (default one) of every pool `n` into each HIT, distinct within
    the HIT, at positions from `draw` (a secret source). Copies are used evenly (the least
    used first: every copy one more HIT keeps a worker who had its item out of), and among
    equally used ones in proportion to `weight` (by pk; default equal). With `images`, a
    copy only joins a HIT showing none of its images (image-disjoint stages)."""
    counts = list(per_hit) if per_hit is not None else [1] * len(pools)
    weights = weight or {}
    uses: dict[int, int] = {}
    for plan in plans:
        shown = {pk for item in plan for pk in images(item)} if images else set()
        for pool, count in zip(pools, counts, strict=True):
            usable = [item for item in pool if weights.get(item.pk, 1.0) > 0]
            for _ in range(min(count, len(usable))):
                if images:
                    usable = [item for item in usable if not images(item) & shown]
                    if not usable:
                        break
                fewest = min(uses.get(item.pk, 0) for item in usable)
                tier = [item for item in usable if uses.get(item.pk, 0) == fewest]
                item = draw.choices(tier, weights=[weights.get(i.pk, 1.0) for i in tier])[0]
                usable.remove(item)
                uses[item.pk] = uses.get(item.pk, 0) + 1
                plan.insert(draw.randint(0, len(plan)), item)
                if images:
                    shown |= images(item)
    return plans


def item_images(item: Item) -> frozenset[int]:
    """The images a question about `item` shows (every task shows its positive and, if any,
    its negative)."""
    return frozenset(pk for pk in (item.positive_id, item.negative_id) if pk is not None)


def gold_kept_apart(batch: Batch) -> bool:
    """Whether the claim keeps `batch`'s workers off HITs holding a gold copy of an item they
    had (`gold_seen_before`): only a stage whose task type places gold (`gold_kinds`), the
    only HITs a gold copy is ever planned into. Elsewhere the rule could keep nobody off, and
    the claim leaves its subquery out (the free-slot search's build and compile 0.60x)."""
    return bool(task_type_for(batch.stage).gold_kinds)


def gold_seen_before(worker: Worker) -> Exists:
    """HITs (as a filter on Hit) holding a gold copy of an item `worker` had before, as the
    real item or as that copy: remembering it would tell them which question is gold."""
    seen = Question.objects.filter(hit__assignments__worker=worker).values("item_id")
    return Exists(
        Question.objects.filter(
            hit=OuterRef("pk"), item__kind__in=GOLD_KINDS, item__source__isnull=False
        ).filter(Q(item_id__in=seen) | Q(item__source_id__in=seen))
    )


def gold_warnings(*, batch: Batch) -> list[str]:
    """Why a batch of a stage that may hold gold holds none (shown before publishing)."""
    run = batch.run
    if gold_source(run) != ESTABLISHED:
        return []
    if Question.objects.filter(hit__batch=batch, item__kind__in=GOLD_KINDS).exists():
        return []
    need = run_settings(run).gold_min_answers
    text = (
        "no gold questions: nothing of this stage is established yet (gold is copied from "
        f"items of earlier batches that at least {need} workers answered alike, "
        "gold_source 'established'), so this batch's work is checked by agreement only"
    )
    if batch.assignments_per_hit < need:
        text += (
            f"; with {batch.assignments_per_hit} worker(s) per HIT none of its items can become "
            f"gold either: make a stage's first batch a calibration batch with at least {need} "
            "workers per HIT"
        )
    else:
        text += "; its high-agreement items become gold for the stage's later batches"
    return [text]
