"""Argument types for the management commands' numbers, in one place: a value out of range is
refused while the command line is parsed, and argparse names the option ("argument --rows:
must be a whole number from 0 to 10000, got '-1'"). From call_command that is a CommandError;
from a shell, the usage and the message, exit status 2, never a traceback."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable, Iterable

from annotation.run_settings import Setting

ID_MAX = 2**63 - 1  # the largest primary key PostgreSQL's bigint holds
SEED_MAX = 2**32 - 1  # numpy's generators take seeds from 0 to 2**32 - 1


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:40] + "…")


def whole(low: int, high: int) -> Callable[[str], int]:
    """A whole number from `low` to `high` (inclusive)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:  # also text of more than 4300 digits
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"must be a whole number from {low} to {high}, got {_shown(text)}"
            )
        return value

    parse.__name__ = f"whole number {low}..{high}"
    return parse


def number(low: float, high: float) -> Callable[[str], float]:
    """A finite number from `low` to `high` (float() alone takes "nan", "inf" and "1e400")."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"must be a number from {low:g} to {high:g}, got {_shown(text)}"
            )
        return value

    parse.__name__ = f"number {low:g}..{high:g}"
    return parse


def setting(settings: Iterable[Setting], key: str) -> Callable[[str], int | float]:
    """The range a run setting `key` declares (a flow's `settings.py`), for the option that
    sets it: the command line refuses what the run's checks would."""
    found = next(s for s in settings if s.key == key)
    if found.low is None or found.high is None:
        raise ValueError(f"setting {key} declares no range")
    if found.kind == "number":
        return number(found.low, found.high)
    return whole(int(found.low), int(found.high))


def writable_file(text: str) -> str:
    """A file the command writes at its end: its folder must exist and take files now, so a
    long run does not end in an error (or a traceback) about where its result was to go."""
    folder = os.path.dirname(os.path.abspath(text)) or "."
    if not text or os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"must name a file, got {_shown(text)}")
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(
            f"cannot write {_shown(text)}: no writable folder {folder}"
        )
    return text


record_id = whole(1, ID_MAX)  # a batch, run, job, export or HIT id
seed = whole(0, SEED_MAX)
