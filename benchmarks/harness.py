"""What the benchmark scripts share: each measurement in a fresh interpreter, peak RSS, BLAS."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from typing import Any

import numpy as np

MB = 1024 * 1024


def peak_rss() -> int:
    """Peak resident set size of this process so far, in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def in_subprocess(script: str, name: str, argv: list[str]) -> dict[str, Any]:
    """Run measurement `name` of `script` in a fresh interpreter and read the JSON it prints
    last, so each measurement's peak memory is its own."""
    command = [sys.executable, script, "--child", name, *argv]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"measurement {name!r} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def fmt_mb(value: float) -> str:
    return f"{value / MB:,.0f}"


def blas_name() -> str:
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]  # type: ignore[index]
        return f"{blas['name']} {blas['version']}"
    except (KeyError, TypeError, AttributeError):
        return "unknown BLAS"
