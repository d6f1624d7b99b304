"""docs/console-and-api.md's API quick start runs as written (issue 46: it answered 403 for the
user it had just made). Its shell blocks run in order, in one shell, against `manage.py serve`
on a fresh embedded installation with DEBUG on and the file-based broker, as `make serve` runs
it. The test supplies only the server's address (the doc's is `make serve`'s) and the
interpreter (`.venv/bin/python` is what `make` creates)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.annotation.crowd.local.test_views_sqlite_concurrency import _env
from tests.annotation.management.commands.test_serve import serving

pytestmark = pytest.mark.long

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "console-and-api.md"
SECTION = "## API quick start"
DOC_URL = "http://127.0.0.1:8000"


def quick_start_blocks() -> list[str]:
    """The section's shell blocks, in order."""
    text = DOC.read_text()
    start = text.index(f"\n{SECTION}\n")
    end = text.find("\n## ", start + len(SECTION))
    section = text[start : end if end != -1 else None]
    return re.findall(r"^```(?:sh|bash)\n(.*?)^```", section, re.M | re.S)


def test_the_api_quick_start_runs_as_written(tmp_path):
    blocks = quick_start_blocks()
    assert blocks and all(DOC_URL in b or "manage.py" in b for b in blocks)
    # The doc's relative paths, from a folder of the test's own: the export lands there.
    work = tmp_path / "work"
    work.mkdir()
    for name in ("manage.py", "scripts", "data"):
        (work / name).symlink_to(ROOT / name)
    env = {**_env(tmp_path), "DJANGO_DEBUG": "1", "CELERY_BROKER_URL": "filesystem://"}
    with serving(tmp_path, env) as (base, _):
        script = "set -euo pipefail\n" + "\n".join(blocks)
        script = script.replace(DOC_URL, base).replace(".venv/bin/python", sys.executable)
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        log = (tmp_path / "serve.log").read_text()
    assert done.returncode == 0, f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}\n{log[-4000:]}"
    # curl's answer (no newline after it), then the script's lines.
    listed, _ = json.JSONDecoder().raw_decode(done.stdout[done.stdout.index('{"count"') :])
    assert {p["name"]: p["may_create_runs"] for p in listed["results"]} == {
        "Default": False,
        "Vision lab": True,
    }
    assert "in project" in done.stdout and "export v1" in done.stdout
    manifest = json.loads((work / "bison-export" / "manifest.json").read_text())
    assert manifest["records"] > 0
