"""What the benchmark scripts share: each measurement in a fresh interpreter, peak RSS, BLAS,
and the table each script writes to benchmarks/results/<script>.txt (the file the docs link)."""

from __future__ import annotations

import argparse
import atexit
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import numpy as np

MB = 1024 * 1024
RESULTS = Path(__file__).resolve().parent / "results"


def peak_rss() -> int:
    """Peak resident set size of this process's memory image so far (the kernel's VmHWM), in
    bytes. Not getrusage's ru_maxrss: across fork and exec that one keeps the parent's size
    at the fork, so a measuring child of a 150 MB parent reported 150 MB before it did
    anything (the bare COPY's "growth" of ~106 MB in issue 32's tables was that)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # not Linux


class _NotInstalled:
    """A module finder for which `names` are not installed."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


def not_installed(*names: str) -> None:
    """Make `names` unimportable in this process, as in an installation without them (the
    package's own dependencies leave out pandas, which only the dev extras bring; pyarrow
    imports it, about 30 MB, on its first conversion where it is installed)."""
    sys.meta_path.insert(0, _NotInstalled(names))


def in_subprocess(script: str, name: str, argv: list[str]) -> dict[str, Any]:
    """Run measurement `name` of `script` in a fresh interpreter and read the JSON it prints
    last, so each measurement's peak memory is its own."""
    command = [sys.executable, script, "--child", name, *argv]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"measurement {name!r} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


class PartTimes:
    """A job's parts timed one after another: `timed(name, call)` runs `call`, keeps its
    seconds under `name` (in `seconds`, in order) and returns its value."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def timed(self, name: str, call: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        value = call()
        self.seconds[name] = time.perf_counter() - start
        return value


def fmt_mb(value: float) -> str:
    return f"{value / MB:,.0f}"


def blas_name() -> str:
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]  # type: ignore[index]
        return f"{blas['name']} {blas['version']}"
    except (KeyError, TypeError, AttributeError):
        return "unknown BLAS"


def results_argument(parser: argparse.ArgumentParser, script: str) -> None:
    """Add `--results PATH` (default benchmarks/results/<script>.txt; '' writes no file)."""
    default = RESULTS / f"{Path(script).stem}.txt"
    parser.add_argument(
        "--results",
        default=str(default),
        help=f"also write what is printed to this file (default {default.relative_to(RESULTS.parents[1])}; '' for none)",
    )


class _Tee:
    def __init__(self, *streams: IO[str]) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.streams[0], name)


def results_tee(path: str) -> None:
    """From now on, copy everything this process prints to `path` as well (nothing if empty):
    the measured table the docs link to instead of copying its numbers."""
    if not path:
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "w", encoding="utf-8")  # noqa: SIM115 - open until the process exits
    terminal = sys.stdout

    def close() -> None:
        sys.stdout = terminal
        handle.close()

    atexit.register(close)
    sys.stdout = _Tee(terminal, handle)
    print(f"(this output is also written to {path})", file=sys.stderr)
