"""How long a `manage.py` command takes to start, against a bare Django project (issue 46).

Each command runs in a fresh interpreter, `--runs` times, interleaved with the others so the
machine's drift touches them alike; the table gives each one's median wall time and its ratio
to the baseline: `django-admin help` in a project `django-admin startproject` just made in a
temporary folder (Django, its settings and nothing else). The project's commands run in a
throw-away embedded installation (SQLite, migrated once before timing, in a temporary
CROWDVL_VAR_DIR; no broker, no provider credentials):

- `manage.py help`: settings, every app's `ready()` and the command registry;
- `manage.py check`: the system checks, which load every URL and view, as most commands do
  before they run;
- `manage.py project list`: one of our commands that touches no crowd provider.

    .venv/bin/python benchmarks/command_startup.py [--runs 7] [--project PATH]

`--project` measures another checkout of this project (e.g. an older commit's, to compare).
`python -X importtime manage.py help 2>imp.txt` shows where a slow start spends its time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import results_argument, results_tee  # noqa: E402

BASELINE = "django-admin help (bare project)"


def _timed(command: list[str], *, cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return seconds


def _bare_project(folder: Path) -> tuple[list[str], dict[str, str]]:
    """`django-admin help` in a project made by `django-admin startproject`, and its env."""
    admin = Path(sys.executable).with_name("django-admin")
    folder.mkdir()
    subprocess.run([str(admin), "startproject", "bare", str(folder)], check=True)
    env = {**os.environ, "PYTHONPATH": str(folder), "DJANGO_SETTINGS_MODULE": "bare.settings"}
    return [str(admin), "help"], env


def _embedded_env(var_dir: Path) -> dict[str, str]:
    """A throw-away embedded installation: SQLite in `var_dir`, tasks in-process."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    return {**env, "CROWDVL_VAR_DIR": str(var_dir), "DJANGO_DEBUG": "1"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="runs of each command (default 7)")
    parser.add_argument("--project", default=str(ROOT), help="the checkout to measure")
    results_argument(parser, __file__)
    args = parser.parse_args()
    results_tee(args.results)
    project = Path(args.project).resolve()
    python = sys.executable

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="startup-") as tmp:
        bare_command, bare_env = _bare_project(Path(tmp) / "bare")
        env = _embedded_env(Path(tmp) / "var")
        # The measured code is the checkout's (manage.py puts its folder first on the path).
        where = subprocess.run(
            [python, "-c", "import annotation; print(annotation.__file__)"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        subprocess.run(
            [python, "manage.py", "migrate", "-v", "0"], cwd=project, env=env, check=True
        )
        commands: dict[str, tuple[list[str], Path, dict[str, str]]] = {
            BASELINE: (bare_command, Path(tmp), bare_env),
            "manage.py help": ([python, "manage.py", "help"], project, env),
            "manage.py check": ([python, "manage.py", "check"], project, env),
            "manage.py project list": ([python, "manage.py", "project", "list"], project, env),
        }
        for command, cwd, command_env in commands.values():  # warm the file cache once
            _timed(command, cwd=cwd, env=command_env)
        seconds: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, (command, cwd, command_env) in commands.items():
                seconds[name].append(_timed(command, cwd=cwd, env=command_env))

    medians = {name: statistics.median(values) for name, values in seconds.items()}
    print(f"Command start-up, median of {args.runs} runs each (wall time, fresh interpreter)")
    print(f"code measured: {Path(where).parent.parent}")
    print(
        f"1-min load {load_before:.2f} before, {os.getloadavg()[0]:.2f} after ({os.cpu_count()} CPUs)"
    )
    print(f"{'command':<36} {'median s':>9} {'min s':>7} {'max s':>7} {'x baseline':>11}")
    for name, values in seconds.items():
        ratio = medians[name] / medians[BASELINE]
        print(
            f"{name:<36} {medians[name]:>9.3f} {min(values):>7.3f} {max(values):>7.3f}"
            f" {ratio:>11.2f}"
        )


if __name__ == "__main__":
    main()
