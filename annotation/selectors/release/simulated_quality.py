"""Quality of a simulated run's export against the latent world: shared rows, the mixture of
workers who answered, and the table the demo and `quality_sweep` print."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from annotation.models import GOLD_KINDS, Answer, Run
from annotation.run_settings import run_settings
from pipeline.expectation import Mixture, wilson
from pipeline.simulate import WorkerProfile
from pipeline.world import World


def run_world(run: Run) -> World:
    """The latent world the run's simulated workers answer from: its seed and `world`."""
    settings = run_settings(run)
    return World.from_settings(settings.world, seed=settings.seed)


@dataclass(frozen=True)
class QualityRow:
    flow: str
    population: str
    measure: str  # e.g. "verified precision"
    hits: int  # numerator of the measured share
    total: int  # its denominator
    expected: float | None  # closed form (pipeline.expectation)
    note: str = ""

    @property
    def measured(self) -> float | None:
        return self.hits / self.total if self.total else None

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.hits, self.total)

    @property
    def agrees(self) -> bool | None:
        """Whether the expectation lies in the measured value's 95 % interval."""
        if self.expected is None or not self.total:
            return None
        low, high = self.interval
        return low <= self.expected <= high

    def as_dict(self) -> dict[str, Any]:
        low, high = self.interval
        return {
            **asdict(self),
            "measured": self.measured,
            "interval95": [round(low, 4), round(high, 4)],
            "agrees": self.agrees,
        }


def answer_mixture(
    *,
    run: Run,
    stage: str,
    team: Mapping[str, WorkerProfile],
    gold: bool = False,
) -> Mixture:
    """The profiles of the simulated workers who answered `stage` (gold or other questions),
    in the shares of answers they gave."""
    rows = Answer.objects.filter(
        question__item__run=run, question__hit__batch__stage=stage
    ).values_list("assignment__worker__external_id", "question__item__kind")
    counts: Counter[WorkerProfile] = Counter(
        team[worker] for worker, kind in rows if worker in team and (kind in GOLD_KINDS) == gold
    )
    total = sum(counts.values())
    return [(n / total, profile) for profile, n in counts.items()] if total else []


def answering_workers(*, run: Run, stage: str) -> set[str]:
    """External ids of the workers who answered `stage` in `run`."""
    return set(
        Answer.objects.filter(
            question__item__run=run, question__hit__batch__stage=stage
        ).values_list("assignment__worker__external_id", flat=True)
    )


def quality_lines(rows: Iterable[QualityRow]) -> list[str]:
    """A fixed-width table: measured share with its 95 % interval and the expectation."""
    lines = [
        f"{'flow':<6} {'population':<13} {'measure':<28} {'measured':>9} {'95% interval':>17} "
        f"{'expected':>9}  n"
    ]
    for row in rows:
        low, high = row.interval
        measured = f"{100 * row.measured:.2f}%" if row.measured is not None else "-"
        expected = f"{100 * row.expected:.2f}%" if row.expected is not None else "-"
        mark = {True: "", False: " (outside)", None: ""}[row.agrees]
        lines.append(
            f"{row.flow:<6} {row.population:<13} {row.measure:<28} {measured:>9} "
            f"{f'{100 * low:.2f}-{100 * high:.2f}%':>17}  {expected:>9}{mark}  {row.total}"
            + (f"  {row.note}" if row.note else "")
        )
    return lines
