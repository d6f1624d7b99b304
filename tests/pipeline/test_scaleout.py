"""The scale-out model's arithmetic: known part times give known makespans and job times."""

from __future__ import annotations

import pytest

from pipeline.errors import InputError
from pipeline.scaleout import JobProfile, amdahl_limit, makespan, predict, profile_from_timings


def test_makespan_list_schedules_in_dispatch_order() -> None:
    parts = [4.0, 3.0, 2.0, 2.0, 1.0]
    assert makespan(parts, 1) == 12.0
    # w0: 4, then 2 (free at 4) -> 6; w1: 3, then 2 (free at 3) -> 5, then 1 (free at 5) -> 6
    assert makespan(parts, 2) == 6.0
    # w0: 4; w1: 3 then 1 -> 4; w2: 2 then 2 -> 4
    assert makespan(parts, 3) == 4.0
    # Dispatch order matters: the long part last leaves one worker with it alone at the end.
    assert makespan([1.0, 1.0, 1.0, 4.0], 2) == 5.0
    assert makespan([4.0, 1.0, 1.0, 1.0], 2) == 4.0


def test_makespan_beyond_the_number_of_parts_gives_nothing() -> None:
    parts = [5.0, 3.0, 3.0]
    assert makespan(parts, 3) == 5.0
    assert makespan(parts, 4) == makespan(parts, 16) == 5.0
    assert makespan([], 4) == 0.0


def test_overhead_per_part_and_setup_per_worker() -> None:
    # Every part pays 0.5 of dispatch; each worker's first part also pays 2 of setup.
    assert makespan([1.0] * 4, 1, overhead=0.5, setup=2.0) == 2.0 + 4 * 1.5
    # Two workers: each pays the setup once, then takes two parts: 2 + 1.5 + 1.5.
    assert makespan([1.0] * 4, 2, overhead=0.5, setup=2.0) == 5.0
    # Four workers: four setups in parallel.
    assert makespan([1.0] * 4, 4, overhead=0.5, setup=2.0) == 3.5


def test_predict_and_amdahl_limit() -> None:
    profile = JobProfile(before=2.0, parts=(3.0,) * 6, overhead=0.0, after=1.0)
    assert predict(profile, 1) == 21.0
    assert predict(profile, 2) == 12.0
    assert predict(profile, 4) == 9.0  # 6 parts on 4 workers: two rounds
    assert predict(profile, 6) == predict(profile, 16) == 6.0
    # T(1) / (serial + longest part) = 21 / 6: what 6 or more workers reach, no N more.
    assert amdahl_limit(profile) == pytest.approx(3.5)


def test_profile_from_timings() -> None:
    timings = {
        "prepare": {"start": 101.0, "end": 103.0, "worker": "a"},
        "parts": {
            # part 10 sorts after 2: numbers, not strings
            "10": {"start": 112.0, "end": 113.0, "worker": "a", "setup": 0.0},
            "0": {"start": 103.5, "end": 108.5, "worker": "a", "setup": 2.0},
            "2": {"start": 109.0, "end": 111.5, "worker": "a", "setup": 0.0},
        },
        "finish": {"start": 113.0, "end": 114.0, "worker": "a"},
    }
    profile = profile_from_timings(timings, created=100.0, finished=114.5)
    assert profile.before == 3.0
    assert profile.parts == (3.0, 2.5, 1.0)
    assert profile.overhead == 0.5  # gaps 0.5, 0.5, 0.5
    assert profile.setup == 2.0
    assert profile.after == 1.5
    # One worker replays the run it was measured on.
    assert predict(profile, 1) == pytest.approx(14.5)


def test_bad_timings_are_named() -> None:
    with pytest.raises(InputError, match="job 7.*no parts"):
        profile_from_timings({}, created=0.0, finished=1.0, job="job 7")
    timings = {
        "prepare": {"start": 0.0, "end": 1.0},
        "parts": {"0": {"start": 1.0, "end": "late"}},
        "finish": {"start": 2.0, "end": 2.0},
    }
    with pytest.raises(InputError, match="record part 0: field 'end'"):
        profile_from_timings(timings, created=0.0, finished=3.0)
    with pytest.raises(InputError, match="field 'workers'"):
        makespan([1.0], 0)
