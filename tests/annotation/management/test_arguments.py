"""Every management command's bad inputs (issue 47): a nonexistent id, a negative, huge or
non-finite number, another flow's run or stage, a file that is not there. Each ends in a
clean CommandError that names the option or the value, never a traceback. The commands are
listed from the filesystem: a new one fails `test_every_command_is_covered` until it has
bad inputs below or a reason in EXEMPT."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import RunKind
from annotation.services.runs.runs import run_create

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[3]
MISSING = "987654321"  # an id no row has
HUGE = "9" * 30  # beyond any id column
RUN = "{run}"  # replaced by a BISON run's id
NOWHERE = "/nonexistent/p4-input"

EXEMPT = {
    "prolific_check": "takes no arguments",
    "prolific_reconcile": "takes no arguments",
    "prolific_hooks": "takes only flags (--new-secret, --resubscribe)",
    "mturk_check": "takes no arguments",
    "installation_regenerate": "takes no arguments",
}


def case(command, args, *expected):
    return pytest.param(command, args, expected, id=f"{command} {' '.join(args)}"[:90])


def ids_of(command, *lead, tail=()):
    """The positional id `lead`+id+`tail`: missing, zero, negative and huge."""
    return [
        case(command, [*lead, MISSING, *tail], MISSING),
        case(command, [*lead, "0", *tail], "must be a whole number"),
        case(command, [*lead, "-1", *tail], "must be a whole number"),
        case(command, [*lead, HUGE, *tail], "must be a whole number"),
    ]


CASES = [
    *ids_of("panel_settings"),
    *ids_of("panel_bonuses"),
    *ids_of("panel_confirm", tail=[NOWHERE]),
    *ids_of("prolific_publish"),
    *ids_of("prolific_test_study"),
    *ids_of("prolific_pay"),
    case("prolific_sync", ["--batch", "-1"], "argument --batch"),
    case("prolific_sync", ["--batch", MISSING], MISSING),
    *ids_of("invite_workers"),
    case("invite_workers", [RUN, "--csv", NOWHERE], NOWHERE),
    *ids_of("simulate_workers"),
    case("simulate_workers", ["1", "--workers", "0"], "argument --workers"),
    case("simulate_workers", ["1", "--workers", HUGE], "argument --workers"),
    case("simulate_workers", ["1", "--accuracy", "nan"], "argument --accuracy"),
    case("simulate_workers", ["1", "--accuracy", "1.5"], "argument --accuracy"),
    case("simulate_workers", ["1", "--seconds", "inf"], "argument --seconds"),
    case("simulate_workers", ["1", "--seconds", "-3"], "argument --seconds"),
    case("simulate_workers", ["1", "--seed", "-1"], "argument --seed"),
    *ids_of("mturk_publish"),
    case("mturk_sync", ["--batch", "0"], "argument --batch"),
    case("mturk_sync", ["--batch", MISSING], MISSING),
    case("mturk_reconcile", ["--environment", "moon"], "argument --environment"),
    *ids_of("export_release"),
    case("export_release", [RUN, "--export-version", "0"], "argument --export-version"),
    case("export_release", [RUN, "--export-version", "-2"], "argument --export-version"),
    case("export_release", [RUN, "--export-version", HUGE], "argument --export-version"),
    case("export_release", [RUN, "--export-version", "5"], "--export-version", "version 5"),
    case("api_token", ["no-such-user"], "no-such-user"),
    *ids_of("batch_preview"),
    case("batch_preview", ["1", "--number", "0"], "argument --number"),
    case("batch_preview", ["1", "--number", HUGE], "argument --number"),
    *ids_of("jobs", "resume"),
    *ids_of("jobs", "cancel"),
    case("jobs", ["resume"], "give the job id"),
    case("jobs", ["recover", "--stall-seconds", "nan"], "argument --stall-seconds"),
    case("jobs", ["recover", "--stall-seconds", "-5"], "argument --stall-seconds"),
    case("import_coco", [NOWHERE], "p4-input"),
    case("review", ["approve", HUGE], HUGE),
    case("review", ["approve", MISSING], MISSING),
    *ids_of("review", "expire"),
    *ids_of("review", "extend", tail=["--seconds", "60"]),
    case("review", ["extend", "1", "--seconds", "0"], "argument --seconds"),
    case("review", ["extend", "1", "--seconds", HUGE], "argument --seconds"),
    *ids_of("review", "add-assignments", tail=["--count", "1"]),
    case("review", ["add-assignments", "1", "--count", "-5"], "argument --count"),
    *ids_of("review", "top-up"),
    case("quality_sweep", ["--seed", "-1"], "argument --seed"),
    case("quality_sweep", ["--eccv-queries", "0"], "argument --eccv-queries"),
    case("quality_sweep", ["--model-seeds", "-1"], "argument --model-seeds"),
    case("quality_sweep", ["--model-items", HUGE], "argument --model-items"),
    case("quality_sweep", ["--json", f"{NOWHERE}/rows.json"], "--json", "p4-input"),
    *ids_of("batch_pause"),
    case("login_unlock", [], "name a username"),
    *ids_of("create_batch", tail=["--stage", "selection"]),
    case("create_batch", [RUN, "--stage", "cxc-sis"], "--stage", "cxc_sis", "bison"),
    case("create_batch", [RUN, "--stage", "selection", "--items-per-hit", "0"], "--items-per-hit"),
    case("create_batch", [RUN, "--stage", "selection", "--assignments", HUGE], "--assignments"),
    case("create_batch", [RUN, "--stage", "selection", "--limit", "-1"], "--limit"),
    case("create_batch", [RUN, "--stage", "selection", "--seed", HUGE], "--seed"),
    case("create_batch", [RUN, "--stage", "selection", "--lifetime", "-1"], "--lifetime"),
    case("create_batch", [RUN, "--stage", "selection", "--duration", "0"], "--duration"),
    case("create_batch", [RUN, "--stage", "selection", "--approval-delay", "-1"], "--approval"),
    case("create_batch", [RUN, "--stage", "selection", "--first-claim-seconds", "5"], "--first"),
    case("create_batch", [RUN, "--stage", "selection", "--reward", "nan"], "reward"),
    *ids_of("bison_batch", tail=["--stage", "selection"]),
    case("project", ["create", "x" * 300], "name"),
    case("demo", ["--seed", "-1"], "argument --seed"),
    case("demo", ["--stage2-workers", "0"], "argument --stage2-workers"),
    case("demo", ["--stage3-workers", HUGE], "argument --stage3-workers"),
    case("demo", ["--eccv-queries", "-1"], "argument --eccv-queries"),
    *ids_of("run_texts"),
    case("run_texts", [RUN, "--consent", NOWHERE], NOWHERE),
    *ids_of("run_items", tail=["--stage", "bison_selection"]),
    case("run_items", [RUN, "--stage", "cxc_sis"], "--stage", "cxc_sis", "bison"),
    case("run_items", [RUN, "--stage", "bison_selection", "--limit", "-5"], "argument --limit"),
    case("run_items", [RUN, "--stage", "bison_selection", "--limit", HUGE], "argument --limit"),
    case("run_items", [RUN, "--stage", "bison_selection", "--offset", "-1"], "argument --offset"),
    case("run_items", [RUN, "--stage", "bison_selection", "--offset", HUGE], "argument --offset"),
    *ids_of("job_status"),
    case("import_flickr8k", [NOWHERE, "--image-location", "/tmp"], "p4-input"),
    case("project_member", ["add", "no-such-project", "nobody", "viewer"], "no-such-project"),
    *ids_of("batch_status"),
    case("batch_status", ["1", "--rows", "-1"], "argument --rows"),
    case("batch_status", ["1", "--rows", HUGE], "argument --rows"),
    case("stop_hits", ["--run", MISSING, "--reason", "x", "--yes"], MISSING),
    case("stop_hits", ["--run", "0", "--reason", "x", "--yes"], "argument --run"),
    case("serve", ["--concurrency", "0"], "argument --concurrency"),
    case("serve", ["--concurrency", HUGE], "argument --concurrency"),
    case("bison_create_run", ["no-such-dataset"], "no-such-dataset"),
    case("bison_create_run", [HUGE], HUGE),
    case("bison_create_run", ["d", "--verifiers", "0"], "argument --verifiers"),
    case("bison_create_run", ["d", "--seed", HUGE], "argument --seed"),
    case("bison_evaluate", ["--annotations", NOWHERE, "--predictions", NOWHERE], NOWHERE),
    *ids_of("bison_export"),
    *ids_of("bison_pairing"),
    case("bison_pairing", ["1", "--dim", "1"], "argument --dim"),
    case("bison_pairing", ["1", "--epochs", "0"], "argument --epochs"),
    case("bison_pairing", ["1", "--seed", "-1"], "argument --seed"),
    case("bison_pairing", ["1", "--block-size", HUGE], "argument --block-size"),
    *ids_of("quality_import_candidates"),
    case("quality_import_candidates", [RUN, "--make-items"], "caption_quality"),
    case("quality_create_run", ["no-such-dataset"], "no-such-dataset"),
    case("quality_correlate", ["--expert", NOWHERE], "p4-input"),
    *ids_of("quality_export"),
    case("quality_export", [RUN], "caption_quality"),
    *ids_of("cxc_export"),
    case("cxc_export", [RUN], "cxc"),
    case("cxc_evaluate", ["--cxc", NOWHERE, "--embeddings", NOWHERE], "p4-input"),
    case("cxc_evaluate", ["--cxc", "x", "--embeddings", "y", "--draws", "0"], "argument --draws"),
    case("cxc_evaluate", ["--cxc", "x", "--embeddings", "y", "--seed", "-1"], "argument --seed"),
    case("cxc_create_run", ["no-such-dataset"], "no-such-dataset"),
    *ids_of("cxc_gold_import", tail=[NOWHERE, "--stage", "sis"]),
    case("cxc_gold_import", [RUN, NOWHERE, "--stage", "sis"], "cxc"),
    *ids_of("cxc_sample"),
    case("cxc_sample", [RUN], "cxc"),
    *ids_of("eccv_model_agreement"),
    case("eccv_model_agreement", ["1", "--depth", "0"], "argument --depth"),
    case("eccv_model_agreement", [RUN], "eccv"),
    *ids_of("eccv_export"),
    case("eccv_export", [RUN], "eccv"),
    *ids_of("eccv_import_cxc", tail=[NOWHERE]),
    case("eccv_import_cxc", ["1", NOWHERE, "--threshold", "nan"], "argument --threshold"),
    case("eccv_import_cxc", [RUN, NOWHERE], "eccv"),
    *ids_of("eccv_add_annotator", tail=["m", "--kind", "fasttext"]),
    case("eccv_add_annotator", ["1", "m", "--kind", "fasttext", "--dim", "1"], "argument --dim"),
    case("eccv_add_annotator", [RUN, "m", "--kind", "fasttext"], "eccv"),
    *ids_of("eccv_report"),
    case("eccv_report", [RUN], "eccv"),
    *ids_of("eccv_propose"),
    case("eccv_propose", [RUN], "eccv"),
    *ids_of("eccv_evaluate", tail=["--rankings", NOWHERE]),
    case("eccv_evaluate", ["1", "--rankings", NOWHERE, "--ks", "0"], "--ks"),
    case("eccv_create_run", ["no-such-dataset"], "no-such-dataset"),
    case("eccv_create_run", [HUGE], HUGE),
    case("eccv_create_run", ["d", "--k", "0"], "argument --k"),
    case("eccv_create_run", ["d", "--image-queries", HUGE], "argument --image-queries"),
    case("eccv_create_run", ["d", "--cxc-threshold", "nan"], "argument --cxc-threshold"),
    case("eccv_create_run", ["d", "--image-query-set", "0"], "argument --image-query-set"),
]


def commands_on_disk():
    found = (ROOT / "annotation").glob("**/management/commands/*.py")
    return sorted(p.stem for p in found if not p.stem.startswith("_"))


def test_every_command_is_covered():
    tested = {p.values[0] for p in CASES}
    missing = [c for c in commands_on_disk() if c not in tested and c not in EXEMPT]
    assert not missing, f"commands without bad inputs here or a reason in EXEMPT: {missing}"
    assert not set(EXEMPT) & tested
    assert len(commands_on_disk()) > 50


@pytest.mark.parametrize(("command", "args", "expected"), CASES)
def test_a_bad_input_is_a_clean_error_naming_it(request, command, args, expected, capsys):
    if RUN in args:  # a dataset is made only where a case needs a run
        dataset = request.getfixturevalue("dataset")
        run = run_create(dataset=dataset, kind=RunKind.BISON, name="inputs", config={})
        args = [a.replace(RUN, str(run.pk)) for a in args]
    with pytest.raises(CommandError) as refused:  # anything else would be a traceback
        call_command(command, *args)
    message = str(refused.value)
    for text in expected:
        assert text in message, message
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(
    "args",
    [
        ["batch_status", "1", "--rows", "-1"],
        ["run_items", "1", "--stage", "bison_selection", "--limit", HUGE],
        ["export_release", "1", "--export-version", "0"],
    ],
)
def test_from_a_shell_a_bad_input_is_one_message_and_no_traceback(args, settings):
    # Refused while the command line is parsed: no database is reached.
    env = {**os.environ, "DJANGO_SECRET_KEY": settings.SECRET_KEY}
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2  # argparse's usage error
    assert "Traceback" not in done.stderr, done.stderr
    assert f"argument {args[-2]}: must be a whole number" in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("run_id", "message"),
    [
        ("99999", "no run 99999"),
        (str(2**63), "argument run: must be a whole number"),  # beyond the id column
        (str(2**70), "argument run: must be a whole number"),
    ],
)
def test_unknown_ids_on_the_cli_are_a_clear_error(run_id, message):
    with pytest.raises(CommandError, match=message):
        call_command("bison_export", run_id)


def test_bad_ks_are_a_clear_error():
    with pytest.raises(CommandError, match="--ks"):
        call_command("eccv_evaluate", "1", "--rankings", "x.json", "--ks", "abc")
