"""Spend settings renamed provider-neutral: the new name wins, the old MTurk name still reads
with a deprecation warning naming both."""

import subprocess
import sys
from pathlib import Path

import pytest

from config.env import SettingRenamed, env_renamed


def test_new_name_wins_silently(monkeypatch, recwarn):
    monkeypatch.setenv("CROWDVL_DAILY_CAP", "5.00")
    monkeypatch.setenv("CROWDVL_MTURK_DAILY_CAP", "9.00")
    assert env_renamed("CROWDVL_DAILY_CAP", "CROWDVL_MTURK_DAILY_CAP") == "5.00"
    assert not [w for w in recwarn if issubclass(w.category, SettingRenamed)]


def test_old_name_still_reads_with_a_deprecation_warning(monkeypatch):
    monkeypatch.delenv("CROWDVL_BUDGET", raising=False)
    monkeypatch.setenv("CROWDVL_MTURK_BUDGET", "12.50")
    with pytest.warns(DeprecationWarning, match="CROWDVL_MTURK_BUDGET.*CROWDVL_BUDGET"):
        assert env_renamed("CROWDVL_BUDGET", "CROWDVL_MTURK_BUDGET") == "12.50"


def test_neither_set_is_none(monkeypatch):
    monkeypatch.delenv("CROWDVL_SYNC_SECONDS", raising=False)
    monkeypatch.delenv("CROWDVL_MTURK_SYNC_SECONDS", raising=False)
    assert env_renamed("CROWDVL_SYNC_SECONDS", "CROWDVL_MTURK_SYNC_SECONDS") is None


def test_settings_read_the_old_names(tmp_path):
    """A server started with the old variables gets the limits, and says so on stderr."""
    code = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='config.settings'; "
        "from django.conf import settings; "
        "print(settings.CROWDVL_BUDGET, settings.CROWDVL_DAILY_CAP)"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "DJANGO_DEBUG": "1",
        "CROWDVL_VAR_DIR": str(tmp_path),
        "CROWDVL_MTURK_BUDGET": "30.00",
        "CROWDVL_MTURK_DAILY_CAP": "70.00",
    }
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["30.00", "70.00"]
    assert "CROWDVL_MTURK_DAILY_CAP is deprecated" in done.stderr
