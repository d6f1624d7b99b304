"""Who can still fill a batch's open slots under the claim's rules, and how many more people it
needs (issue 46: a small lab's BISON stage 3 stalled in silence).

The rules are the claim's (`services/work/claim.py`): nobody takes a HIT twice, nor a HIT re-offered
from one they had (`judged_before`), nor one holding a gold copy of an item they had
(`gold_seen_before`), nor, in an image-disjoint stage that kept the rule, one showing an image
they saw in another HIT (`image_seen_before`); blocked workers and another stage's pool take
nothing. Here they are read for every member of the stage's pool at once, from rows loaded
once, so the page costs a few queries whatever the pool's size.

"How many people" is a greedy count: everyone takes, in the claim's order (HIT position), every
HIT the rules still let them take. Real people do fewer HITs, so the figure is a floor."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count
from django.utils import timezone

from annotation.models import (
    GOLD_KINDS,
    Assignment,
    Batch,
    Hit,
    HitImage,
    HitStatus,
    Invitation,
    PoolMembership,
    Question,
    Worker,
)
from annotation.services.datasets.images import images_kept_apart
from annotation.services.work.slots import active_assignments
from annotation.tasktypes import task_type_for

# Why a pool member cannot take a HIT, in the claim's order; the words the page shows.
DID_IT = "did this HIT already"
SAME_ITEMS = "had its items on the HIT it was re-offered from"
GOLD_SEEN = "had the item one of its gold questions copies"
IMAGE_SEEN = "saw one of its images in another HIT"
REASON_ORDER = (DID_IT, SAME_ITEMS, GOLD_SEEN, IMAGE_SEEN)
# Why someone of the run cannot work on the batch at all.
OTHER_POOL = "work in another stage's pool (the stages' workers stay different people)"
BLOCKED = "are blocked"

# Past this many new people the greedy count stops (it says "more than").
MORE_PEOPLE_CAP = 5000


@dataclass
class _Taker:
    """What one person has seen, as the rules read it."""

    images: set[int] = field(default_factory=set)
    items: set[int] = field(default_factory=set)
    hits: set[int] = field(default_factory=set)  # HITs of this batch they had
    reoffered: set[int] = field(default_factory=set)  # HITs re-offered from one they had


@dataclass(frozen=True)
class _Hits:
    """The open HITs with free slots, in the claim's order, and what the rules read of them."""

    order: list[int]
    slots: dict[int, int]
    images: dict[int, frozenset[int]]
    items: dict[int, frozenset[int]]
    gold: dict[int, frozenset[int]]  # gold copies' own ids and their sources' ids


@dataclass(frozen=True)
class BatchReach:
    open_hits: int
    open_slots: int
    members: int  # pool members (and invited people) who may work on the batch
    barred: dict[str, int]  # people of the run who may not work on it at all, by reason
    stuck_hits: int  # open HITs with more free slots than members allowed on them now
    stuck_slots: int
    why: dict[str, tuple[int, int]]  # reason -> (people, stuck HITs) it keeps off them
    members_fill: int  # slots the current members could still fill, each taking all they may
    more_people: int  # new people needed for the rest (a floor)
    images_apart: bool  # the image rule applies (an image-disjoint stage that kept it)
    # The same count with the image rule relaxed (None: the rule does not apply).
    more_people_relaxed: int | None
    capped: bool = False

    def sentences(self) -> list[str]:
        """The batch page's words: who may work on it, what keeps the others off its open
        HITs, and how many more people it needs."""
        if not self.open_slots:
            return []
        barred = "; ".join(f"{n} {reason}" for reason, n in self.barred.items() if n)
        out = [
            f"{_people(self.members)} in the stage's pool may work on it"
            f"{f' ({barred})' if barred else ''}."
        ]
        if self.members and self.stuck_hits:
            reasons = "; ".join(
                f"{_people(people)} {reason} ({_hits(hits)})"
                for reason, (people, hits) in self.why.items()
            )
            out.append(
                f"{_hits(self.stuck_hits, 'open ')} ({self.stuck_slots} slots) have more free slots "
                f"than pool members allowed to take them{f': {reasons}' if reasons else ''}."
            )
        more = f"more than {self.more_people}" if self.capped else str(self.more_people)
        empty = self.open_slots - self.members_fill
        if not self.more_people:
            out.append(
                f"The pool can fill all {self.open_slots} open slots if its members take every "
                "HIT the claim rules let them."
            )
        elif not self.members:
            out.append(
                f"Its {self.open_slots} open slots need at least {more} different people under "
                "the claim rules, even if each takes every HIT the rules let them."
            )
        else:
            out.append(
                f"Even if every member takes every HIT the claim rules let them, {empty} of the "
                f"{self.open_slots} open slots stay empty: it needs at least {more} more "
                f"{'person' if self.more_people == 1 else 'people'}."
            )
        if self.more_people_relaxed is not None and self.more_people_relaxed < self.more_people:
            out.append(
                "Most of that is image-disjointness (nobody sees an image twice): with the rule "
                f"relaxed it would need {self.more_people_relaxed}. A small trusted pool may "
                'relax it on a new batch ("Relax image-disjointness": a cheating risk, '
                "recorded in the datasheet)."
            )
        return out


def _people(n: int) -> str:
    return f"{n} {'person' if n == 1 else 'people'}"


def _hits(n: int, kind: str = "") -> str:
    return f"{n} {kind}HIT{'' if n == 1 else 's'}"


def batch_reach(*, batch: Batch, now: datetime | None = None) -> BatchReach:
    """Who can fill `batch`'s open slots now, what keeps the others off, and how many more
    people the rest needs (see the module's docstring)."""
    now = now or timezone.now()
    hits = _open_hits(batch, now)
    apart = images_kept_apart(batch)
    members, barred = _members(batch)
    takers = _seen(batch, members, hits)
    allowed: dict[int, int] = defaultdict(int)
    kept_off: dict[int, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
    for worker_id, taker in takers.items():
        for hit in hits.order:
            reason = _reason(taker, hit, hits, apart)
            if reason is None:
                allowed[hit] += 1
            else:
                kept_off[hit][reason].add(worker_id)
    stuck = [h for h in hits.order if allowed[h] < hits.slots[h]]
    why: dict[str, tuple[int, int]] = {}
    for reason in REASON_ORDER:
        people = {w for h in stuck for w in kept_off[h].get(reason, ())}
        on = sum(1 for h in stuck if kept_off[h].get(reason))
        if people:
            why[reason] = (len(people), on)
    filled, more, capped = _fill(takers, hits, apart)
    relaxed = None
    if apart and task_type_for(batch.stage).images_disjoint:
        relaxed = _fill(takers, hits, apart=False)[1]
    return BatchReach(
        open_hits=len(hits.order),
        open_slots=sum(hits.slots.values()),
        members=len(takers),
        barred=barred,
        stuck_hits=len(stuck),
        stuck_slots=sum(hits.slots[h] - allowed[h] for h in stuck),
        why=why,
        members_fill=filled,
        more_people=more,
        images_apart=apart,
        more_people_relaxed=relaxed,
        capped=capped,
    )


def _open_hits(batch: Batch, now: datetime) -> _Hits:
    active = dict(
        Assignment.objects.filter(active_assignments(now, batch), hit__batch=batch)
        .values("hit")
        .annotate(n=Count("pk"))
        .values_list("hit", "n")
    )
    slots: dict[int, int] = {}
    for pk, most, extra in (
        Hit.objects.filter(batch=batch, status=HitStatus.OPEN)
        .order_by("position")
        .values_list("pk", "max_assignments", "extra_assignments")
    ):
        free = (batch.assignments_per_hit if most is None else most) + extra - active.get(pk, 0)
        if free > 0:
            slots[pk] = free
    images: dict[int, set[int]] = defaultdict(set)
    for hit, image in HitImage.objects.filter(hit__in=slots).values_list("hit", "image"):
        images[hit].add(image)
    items: dict[int, set[int]] = defaultdict(set)
    gold: dict[int, set[int]] = defaultdict(set)
    for hit, item, kind, source in Question.objects.filter(hit__in=slots).values_list(
        "hit", "item", "item__kind", "item__source"
    ):
        items[hit].add(item)
        if kind in GOLD_KINDS and source is not None:
            gold[hit] |= {item, source}
    return _Hits(
        order=list(slots),
        slots=slots,
        images={h: frozenset(images[h]) for h in slots},
        items={h: frozenset(items[h]) for h in slots},
        gold={h: frozenset(gold[h]) for h in slots},
    )


def _members(batch: Batch) -> tuple[list[int], dict[str, int]]:
    """The people who may work on `batch` (its stage's pool, and people invited to the run
    who joined no pool yet), and how many of the run's others may not, by reason."""
    pools = dict(PoolMembership.objects.filter(run=batch.run).values_list("worker", "stage"))
    invited = set(
        Invitation.objects.filter(run=batch.run, revoked_at__isnull=True).values_list(
            "worker", flat=True
        )
    )
    people = set(pools) | invited
    blocked: set[int] = set()
    mine: set[int] = set()  # of the batch's provider: the only ones who may claim it
    for pk, is_blocked in Worker.objects.filter(pk__in=people, provider=batch.provider).values_list(
        "pk", "blocked"
    ):
        mine.add(pk)
        if is_blocked:
            blocked.add(pk)
    other_pool = {w for w in mine if pools.get(w, batch.stage) != batch.stage}
    members = sorted(mine - other_pool - blocked)
    return members, {OTHER_POOL: len(other_pool), BLOCKED: len(blocked - other_pool)}


def _seen(batch: Batch, members: list[int], hits: _Hits) -> dict[int, _Taker]:
    """What each member has seen that the rules read, limited to what this batch shows."""
    takers = {w: _Taker() for w in members}
    shown = set().union(*hits.images.values()) if hits.images else set()
    gold = set().union(*hits.gold.values()) if hits.gold else set()
    for worker, image in (
        HitImage.objects.filter(hit__assignments__worker__in=members, image__in=shown)
        .values_list("hit__assignments__worker", "image")
        .distinct()
    ):
        takers[worker].images.add(image)
    for worker, item in (
        Question.objects.filter(hit__assignments__worker__in=members, item__in=gold)
        .values_list("hit__assignments__worker", "item")
        .distinct()
    ):
        takers[worker].items.add(item)
    for worker, hit in Assignment.objects.filter(worker__in=members, hit__batch=batch).values_list(
        "worker", "hit"
    ):
        takers[worker].hits.add(hit)
    for worker, hit in Hit.objects.filter(
        batch=batch, reoffer_of__assignments__worker__in=members
    ).values_list("reoffer_of__assignments__worker", "pk"):
        takers[worker].reoffered.add(hit)
    return takers


def _reason(taker: _Taker, hit: int, hits: _Hits, apart: bool) -> str | None:
    """Why `taker` may not claim `hit`, in the claim's order, or None."""
    if hit in taker.hits:
        return DID_IT
    if hit in taker.reoffered:
        return SAME_ITEMS
    if hits.gold[hit] & taker.items:
        return GOLD_SEEN
    if apart and hits.images[hit] & taker.images:
        return IMAGE_SEEN
    return None


def _fill(takers: dict[int, _Taker], hits: _Hits, apart: bool) -> tuple[int, int, bool]:
    """Slots the members fill, each taking every HIT they may; then how many new people the
    rest needs (the same greedy); and whether that count stopped at its cap."""
    left = dict(hits.slots)
    filled = 0
    for seen in takers.values():
        taker = _Taker(set(seen.images), set(seen.items), set(seen.hits), set(seen.reoffered))
        filled += _take_all(taker, hits, left, apart)
    more = 0
    while any(left.values()):
        if more >= MORE_PEOPLE_CAP:
            return filled, more, True
        if not _take_all(_Taker(), hits, left, apart):
            break  # nobody new could take anything (not under these rules)
        more += 1
    return filled, more, False


def _take_all(taker: _Taker, hits: _Hits, left: dict[int, int], apart: bool) -> int:
    """`taker` claims, in order, every HIT with a free slot the rules let them; how many."""
    taken = 0
    for hit in hits.order:
        if left[hit] and _reason(taker, hit, hits, apart) is None:
            left[hit] -= 1
            taken += 1
            taker.hits.add(hit)
            taker.images |= hits.images[hit]
            taker.items |= hits.items[hit]
    return taken
