"""An adaptive run's expected cost before launch (the batch page and the API's draft): for the
items of a first batch, the judgments and money at the fixed minimum (`start` each), as
expected from the simulation of the run's setting on the realistic population
(`pipeline.adaptive_cost`, cached per process) and at the maximum (`cap` each), priced at the
batch's own cost per judgment (its reward and fees, its gold questions included)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import Any

from django.core.cache import cache

from annotation.flow_registry import task_type_for
from annotation.models import Batch, GoldItemKind, Question
from annotation.providers import provider_for
from annotation.run_settings import run_settings
from pipeline.adaptive_cost import ExpectedJudgments

CENT = Decimal("0.01")


@dataclass(frozen=True)
class AdaptiveCost:
    items: int
    judgments: dict[str, float]  # minimum, expected, expected_low, expected_high, maximum
    cost: dict[str, Decimal]  # the same keys, in the batch's currency
    per_judgment: Decimal
    source: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "items": self.items,
            "judgments": self.judgments,
            "cost": {k: str(v) for k, v in self.cost.items()},
            "per_judgment": str(self.per_judgment),
            "source": self.source,
        }


def _expected(batch: Batch) -> ExpectedJudgments | None:
    """The stage's expectation for the run's setting, kept in the shared cache: the first
    computation in a process imports scipy (~1.5 s), which the launch page must not wait for
    (the draft's creation computes it first, see `pages/batches/views.py`)."""
    setting = run_settings(batch.run).expectation_inputs()  # the policies, the scale
    digest = hashlib.sha256(json.dumps(setting, sort_keys=True).encode()).hexdigest()[:20]
    key = f"adaptive-cost:v1:{batch.stage}:{digest}"
    found = cache.get(key)
    if found is not None:
        return ExpectedJudgments(**found)
    expected = task_type_for(batch.stage).adaptive_expected(run=batch.run)
    if expected is not None:
        cache.set(key, asdict(expected), timeout=7 * 24 * 3600)
    return expected


def batch_adaptive_cost(*, batch: Batch) -> AdaptiveCost | None:
    """None unless the batch is the first of an adaptive run's stage (a follow-up batch's
    items are already part-way)."""
    if batch.options.get("more_judgments"):
        return None
    expected = _expected(batch)
    if expected is None:
        return None
    items = (
        Question.objects.filter(hit__batch=batch)
        .exclude(item__kind__in=GoldItemKind.values)
        .values("item")
        .distinct()
        .count()
    )
    if items == 0:
        return None
    provider = provider_for(batch.provider)
    estimate = provider.cost_estimate(batch=batch)
    total = estimate.total if provider.charges_fees else estimate.rewards
    per = total / (items * batch.assignments_per_hit)
    judgments = expected.totals(items)
    return AdaptiveCost(
        items=items,
        judgments=judgments,
        cost={k: (Decimal(str(v)) * per).quantize(CENT) for k, v in judgments.items()},
        per_judgment=per.quantize(Decimal("0.0001")),
        source=expected.source,
    )
