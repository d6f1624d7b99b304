import pytest

from pipeline.errors import InputError
from pipeline.redundancy import (
    RedundancyPolicy,
    binary_reliability,
    decide,
    needs_more,
    posterior_positive,
    reliability,
)


def test_posterior_and_stopping_follow_agreement_reliability_and_the_cap():
    policy = RedundancyPolicy(start=1, cap=3, confidence=0.98, prior=0.75)
    good = binary_reliability(0.9)
    assert good == pytest.approx(0.9 + 0.1 / 3)
    assert posterior_positive([], 0.75) == pytest.approx(0.75)
    one = posterior_positive([(True, good)], 0.75)
    assert one == pytest.approx(0.75 * good / (0.75 * good + 0.25 * (1 - good)))
    assert needs_more([(True, good)], policy)  # one vote: 0.977 < 0.98
    assert not needs_more([(True, good), (True, good)], policy)  # agreement settles it
    assert needs_more([(True, good), (False, good)], policy)  # disagreement asks again
    assert needs_more([(True, 0.6), (True, 0.6)], policy)  # unreliable workers ask again
    assert not needs_more([(True, 0.6)] * 3, policy)  # the cap
    assert decide([(True, good), (False, good), (True, good)], policy)
    assert not decide([(False, good), (False, good)], policy)
    # A lower bar for negatives stops after one reliable NO.
    cheap = RedundancyPolicy(cap=3, confidence=0.98, confidence_negative=0.8)
    assert not needs_more([(False, good)], cheap) and needs_more([(True, good)], cheap)


def test_reliability_is_smoothed_towards_85_percent():
    assert reliability(0, 0) == pytest.approx(0.85)
    assert reliability(2, 2) > 0.85 > reliability(0, 2)
    assert reliability(100, 200) == pytest.approx(0.5, abs=0.02)


def test_bad_policies_are_refused():
    with pytest.raises(InputError):
        RedundancyPolicy(start=3, cap=2)
    with pytest.raises(InputError):
        RedundancyPolicy(confidence=1.0)
    with pytest.raises(InputError, match="unknown redundancy setting"):
        RedundancyPolicy.from_options({"limit": 2})
    with pytest.raises(InputError, match="bad redundancy setting"):
        RedundancyPolicy.from_options({"cap": "many"})
    assert RedundancyPolicy.from_options({"cap": "4", "confidence": "0.95"}).cap == 4
