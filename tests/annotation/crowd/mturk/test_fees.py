"""MTurk's fees (annotation/crowd/mturk/fees.py): the estimate of a batch's cost."""

from decimal import Decimal

import pytest

from annotation.crowd.mturk.fees import estimate_cost

pytestmark = pytest.mark.django_db


def test_fees_and_estimate():
    assert estimate_cost(hits=10, assignments_per_hit=2, reward=Decimal("0.50")).total == Decimal(
        "12.00"
    )
    assert estimate_cost(hits=1, assignments_per_hit=10, reward=Decimal("0.50")).total == Decimal(
        "7.00"
    )
    cheap = estimate_cost(hits=3, assignments_per_hit=1, reward=Decimal("0.01"))
    assert cheap.fee_per_assignment == Decimal("0.01") and cheap.total == Decimal("0.06")
