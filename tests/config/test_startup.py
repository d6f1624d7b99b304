"""A command starts without the heavy libraries (issue 46): settings, every app's `ready()`
(providers, flows, export specs, job steps registered), the command registry and `help`, then
the system checks that load every URL and view (what most commands run first), in a fresh
process, import none of Celery, boto3, numpy, pyarrow, pandas or the model libraries. What
uses them imports them when it runs. Not timed: the imports are what made start-up slow."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
HEAVY = (
    "boto3",
    "botocore",
    "pyarrow",
    "numpy",
    "pandas",
    "celery",
    "torch",
    "transformers",
    "sklearn",
    "scipy",
)

SCRIPT = """
import contextlib, io, json, sys

import annotation
from django.core.management import execute_from_command_line

with contextlib.redirect_stdout(io.StringIO()):
    execute_from_command_line(["manage.py", *sys.argv[1:]])
heavy = sorted({name.split(".")[0] for name in sys.modules} & set(json.loads(sys.stdin.read())))
print(json.dumps({"code": annotation.__file__, "heavy": heavy}))
"""


def _imported(*command: str) -> dict[str, object]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_SECRET_KEY": settings.SECRET_KEY,
    }
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, *command],
        cwd=ROOT,  # this checkout's code, not an installed copy's
        env=env,
        input=json.dumps(HEAVY),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("command", [("help",), ("check",)])
def test_a_command_starts_without_the_heavy_libraries(command):
    found = _imported(*command)
    assert Path(str(found["code"])).is_relative_to(ROOT)
    assert found["heavy"] == []
