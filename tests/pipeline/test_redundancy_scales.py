"""The rating and preference redundancy policies, and the expected cost the launch page shows."""

import time

import pytest

from pipeline.adaptive_cost import expected_preferences, expected_ratings
from pipeline.errors import InputError
from pipeline.expectation import wilson
from pipeline.redundancy_scales import (
    PreferenceRedundancy,
    RatingRedundancy,
    preference_maximum,
)


def test_a_rating_is_asked_again_while_wide_below_the_cap():
    policy = RatingRedundancy(start=3, cap=7, half_width=0.5)
    assert policy.needs_more(2, 0.1)  # below `start`, however narrow
    assert policy.needs_more(3, 0.51) and not policy.needs_more(3, 0.5)
    assert not policy.needs_more(7, 3.0)  # the cap ends it


def test_a_preference_stops_when_decided_or_pinned_down():
    policy = PreferenceRedundancy(start=6, cap=48, half_width=0.15)
    assert policy.needs_more(6, 5)  # below `start`
    assert not policy.needs_more(6, 6)  # 6 of 6: the interval excludes one half
    low, high = wilson(3, 6)
    assert low < 0.5 < high and policy.needs_more(3, 6)  # 3 of 6: neither
    assert not policy.needs_more(20, 40)  # a tie pinned to within ±0.15
    assert (wilson(20, 40)[1] - wilson(20, 40)[0]) / 2 <= 0.15
    assert not policy.needs_more(24, 48)  # the cap
    # A worker's repeated judgments count once in the share but are spent: the cap bounds them.
    assert policy.needs_more(3, 6, spent=42) and not policy.needs_more(3, 6, spent=48)
    assert preference_maximum(PreferenceRedundancy(start=5, cap=48)) == 50  # rounds of 5


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"start": 0}, "start <= cap"),
        ({"start": 8, "cap": 7}, "start <= cap"),
        ({"cap": 101}, "cap <= 100"),
        ({"half_width": -1}, "half_width"),
        ({"width": 1}, "unknown redundancy setting 'width'"),
        ({"start": "three"}, "bad redundancy setting"),
        ("3", "must be an object"),
    ],
)
def test_bad_rating_settings_name_the_field(options, message):
    with pytest.raises(InputError, match=message) as caught:
        RatingRedundancy.from_options(options, field="adaptive", span=5)
    assert caught.value.field == "adaptive"


def test_the_expectation_lies_between_minimum_and_maximum_and_grows_with_precision():
    loose = expected_ratings(RatingRedundancy(start=2, cap=8, half_width=1.0), (0, 1, 2, 3, 4, 5))
    tight = expected_ratings(RatingRedundancy(start=2, cap=8, half_width=0.4), (0, 1, 2, 3, 4, 5))
    for found in (loose, tight):
        assert found.start <= found.low <= found.per_item <= found.high <= found.cap
        assert "realistic population" in found.source
    assert tight.per_item > loose.per_item
    totals = tight.totals(10)
    assert totals["minimum"] == 20 and totals["maximum"] == 80
    assert totals["minimum"] <= totals["expected"] <= totals["maximum"]
    prefs = expected_preferences(PreferenceRedundancy(start=5, cap=48, half_width=0.15))
    assert 5 <= prefs.per_item <= prefs.cap == 50


def test_a_cached_expectation_is_immediate():
    policy = RatingRedundancy(start=3, cap=6, half_width=0.6)
    expected_ratings(policy, (1, 2, 3, 4))
    began = time.perf_counter()
    expected_ratings(policy, (1, 2, 3, 4))
    assert time.perf_counter() - began < 0.01


def test_eccvs_expected_judgments_follow_its_confidence():
    from pipeline.adaptive_cost import expected_binary
    from pipeline.redundancy import RedundancyPolicy

    sure = expected_binary(RedundancyPolicy(start=1, cap=5, confidence=0.999))
    quick = expected_binary(RedundancyPolicy(start=1, cap=5, confidence=0.9))
    assert 1 <= quick.per_item < sure.per_item <= 5
