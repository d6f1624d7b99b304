"""A run's workers as researchers see them: what each did in this run only (never other runs'
or projects' work), how well (gold accuracy where the run has gold, agreement with the other
workers on the same items), how fast, and what they earned per hour."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db.models import Count, QuerySet

from annotation.flow_registry import flow_for_kind
from annotation.models import Assignment, PoolMembership, Run, Worker
from annotation.selectors.money.pay import CENT, effective_pay, min_hourly_pay, pay_estimate
from annotation.selectors.pseudonyms import worker_pseudonym
from annotation.selectors.reviews.agreement_pairs import agreement_pairs
from annotation.selectors.runs.dashboard import IMPLAUSIBLE_SPEEDUP
from pipeline.expectation import wilson


@dataclass
class WorkerRow:
    worker: Worker
    states: dict[str, int] = field(default_factory=dict)
    pool: str = ""
    gold_right: int = 0
    gold_total: int = 0
    agreement: float | None = None  # share of their answer pairs (`agreement_pairs`) agreeing
    compared: int = 0  # answer pairs with another worker on the same item
    seconds_per_item: float | None = None  # median over the worker's submitted assignments
    # Median over the same assignments of the expected time over the time taken: flagged
    # from IMPLAUSIBLE_SPEEDUP on, as the dashboard flags a batch.
    speedup: float | None = None
    paid: Decimal = Decimal(0)
    hours: float = 0.0
    # How the page names the worker: the platform's id for those who may see it, else the
    # export pseudonym; `platform_id` is None for the others (issue 47).
    label: str = ""
    platform_id: str | None = None

    @property
    def assignments(self) -> int:
        return sum(self.states.values())

    @property
    def gold_accuracy(self) -> float | None:
        return self.gold_right / self.gold_total if self.gold_total else None

    @property
    def gold_interval(self) -> tuple[float, float] | None:
        """95 % Wilson interval of the gold accuracy."""
        return wilson(self.gold_right, self.gold_total) if self.gold_total else None

    @property
    def agreement_interval(self) -> tuple[float, float] | None:
        """95 % Wilson interval of the agreement, read as a share of `compared` answer pairs
        (pairs on one item are not independent: approximate beyond two raters an item)."""
        if self.agreement is None or not self.compared:
            return None
        return wilson(round(self.agreement * self.compared), self.compared)

    @property
    def hourly(self) -> Decimal | None:
        return (self.paid / Decimal(str(self.hours))).quantize(CENT) if self.hours else None

    @property
    def implausible(self) -> bool:
        return self.speedup is not None and self.speedup >= IMPLAUSIBLE_SPEEDUP

    @property
    def below_minimum(self) -> bool:
        return self.hourly is not None and self.hourly < min_hourly_pay()


def _agreement(run: Run) -> dict[int, tuple[float, int]]:
    """Per worker: the share of agreeing pairs among the answer pairs they are in
    (`agreement_pairs`, the run page's measure), and how many pairs that is."""
    pairs: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for (_stage, worker), (ok, n) in agreement_pairs(run).items():
        pairs[worker][0] += ok
        pairs[worker][1] += n
    return {w: (ok / n, n) for w, (ok, n) in pairs.items() if n}


def workers_of_run(*, run: Run) -> QuerySet[Worker]:
    """The workers with work in the run: the only ones its pages and API act on."""
    return Worker.objects.filter(assignments__hit__batch__run=run).distinct()


def run_workers(*, run: Run, platform_ids: bool = False) -> list[WorkerRow]:
    """One row per worker with an assignment in `run`, most assignments first. Workers are
    named by the platform's id with `platform_ids` (permissions.sees_platform_ids), else by
    their pseudonym."""
    rows: dict[int, WorkerRow] = {}
    durations: dict[int, list[float]] = defaultdict(list)
    speedups: dict[int, list[float]] = defaultdict(list)
    expected: dict[int, float] = {}  # seconds per item, per batch
    assignments = (
        Assignment.objects.filter(hit__batch__run=run)
        .select_related("worker", "hit__batch")
        .annotate(n_items=Count("hit__questions"))  # a batch's last HIT may hold fewer
    )
    for assignment in assignments:
        row = rows.setdefault(assignment.worker_id, WorkerRow(worker=assignment.worker))
        row.states[assignment.state] = row.states.get(assignment.state, 0) + 1
        if assignment.submitted_at is not None:
            batch = assignment.hit.batch
            begin = assignment.started_at or assignment.accepted_at
            taken = max(0.0, (assignment.submitted_at - begin).total_seconds())
            per_item = taken / max(1, assignment.n_items)
            durations[assignment.worker_id].append(per_item)
            if batch.pk not in expected:
                expected[batch.pk] = pay_estimate(batch=batch).seconds_per_item
            # 0 s taken: as fast as can be measured (a second), not "infinitely" fast.
            speedups[assignment.worker_id].append(expected[batch.pk] / max(per_item, 1.0))
    for worker, values in durations.items():
        rows[worker].seconds_per_item = round(statistics.median(values), 1)
        rows[worker].speedup = round(statistics.median(speedups[worker]), 1)
    for worker, stage in PoolMembership.objects.filter(run=run).values_list("worker_id", "stage"):
        if worker in rows:
            rows[worker].pool = stage
    flow = flow_for_kind(run.kind)
    if flow is not None and flow.worker_gold is not None:
        for worker, (right, total) in flow.worker_gold(run).items():
            if worker in rows:
                rows[worker].gold_right, rows[worker].gold_total = right, total
    for worker, (share, n) in _agreement(run).items():
        if worker in rows:
            rows[worker].agreement, rows[worker].compared = share, n
    for batch in run.batches.exclude(status="draft"):
        for worker, pay in effective_pay(batch=batch)["per_worker"].items():
            if worker in rows:
                rows[worker].paid += Decimal(pay["paid"])
                rows[worker].hours += pay["hours"]
    for row in rows.values():
        w = row.worker
        row.platform_id = w.external_id if platform_ids else None
        row.label = row.platform_id or worker_pseudonym(
            provider=w.provider, external_id=w.external_id
        )
    return sorted(rows.values(), key=lambda r: (-r.assignments, r.label))


def accuracy_histogram(rows: list[WorkerRow], bins: int = 10) -> dict[str, Any]:
    """Workers per accuracy bin (gold accuracy where the run has gold, else agreement)."""
    gold = any(r.gold_total for r in rows)
    values = [r.gold_accuracy if gold else r.agreement for r in rows]
    counts = [0] * bins
    for v in values:
        if v is not None:
            counts[min(bins - 1, int(v * bins))] += 1
    labels = [f"{100 * i // bins}–{100 * (i + 1) // bins} %" for i in range(bins)]
    return {"measure": "gold accuracy" if gold else "agreement", "labels": labels, "counts": counts}
