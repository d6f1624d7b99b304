"""`export_release --to huggingface`: the real huggingface_hub client against the Hub's
stand-in (a local HTTP server); the dry run, one commit, a lost answer, a cut-off upload, a
bad token (issue 50)."""

import hashlib
import logging
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Publication, PublicationStatus, RemoteCall
from annotation.selectors.release.exports import export_file_entries

pytestmark = pytest.mark.django_db

REPO = "ada/eccv-labels"


def publish(export, *more):  # type: ignore[no-untyped-def]
    call_command("export_release", str(export.run_id), "--to", "huggingface", REPO, *more)


def test_dry_run_lists_every_file_and_calls_nothing(released, hub, capsys):
    publish(released, "--dry-run")
    out = capsys.readouterr().out
    assert hub.calls == [] and not Publication.objects.exists()
    entries = export_file_entries(released)
    assert f"destination: {hub.url}/datasets/{REPO}" in out
    for entry in entries:
        sha = hashlib.sha256(entry.path.read_bytes()).hexdigest()
        assert f"  {entry.name}  {entry.size} bytes  sha256 {sha}" in out
    assert f"{len(entries)} file(s), {sum(e.size for e in entries)} bytes" in out


def test_publishes_in_one_commit_and_skips_it_all_the_second_time(released, hub, capsys):
    publish(released)
    files = hub.files(REPO)
    entries = export_file_entries(released)
    assert set(files) == {e.name for e in entries} | {".gitattributes"}
    for entry in entries:
        data = entry.path.read_bytes()
        there = files[entry.name]
        if there["lfs"]:
            assert (
                there["lfs"]
                == hashlib.sha256(data).hexdigest()
                == hashlib.sha256(hub.lfs[there["lfs"]]).hexdigest()
            )  # noqa: E501
        else:
            assert there["data"] == data
    assert {n for n, f in files.items() if f["lfs"]} == {
        e.name for e in entries if e.name.endswith(".parquet")
    }  # noqa: E501
    assert len(hub.commits(REPO)) == 2  # the repo's first (.gitattributes), then the release
    row = Publication.objects.get()
    assert (
        row.status == PublicationStatus.PUBLISHED and row.remote_url == f"{hub.url}/datasets/{REPO}"
    )
    assert sorted(row.files_done) == sorted(e.name for e in entries)
    calls = len(hub.calls)
    publish(released)
    assert "already published" in capsys.readouterr().out and len(hub.calls) == calls


def test_a_lost_answer_to_the_commit_is_looked_up_not_committed_again(released, hub):
    hub.lose("POST", r"/commit/")
    publish(released)
    assert len(hub.commits(REPO)) == 2  # committed once, though its answer never came
    assert [m for m, p in hub.calls if p.endswith("/commit/main")] == ["POST"]
    call = RemoteCall.objects.get(operation="commit")
    assert call.state == "done" and call.remote_id == hub.commits(REPO)[-1]
    assert Publication.objects.get().status == PublicationStatus.PUBLISHED


def test_an_upload_cut_off_half_way_fails_clearly_then_resumes(released, hub, capsys):
    # Cut at the first Parquet file's upload, then at the commit: each run fails saying why, the
    # Hub shows no commit meanwhile, and the last run sends only what is missing.
    hub.fail("PUT", r"^/lfs-upload/", 403, {"error": "Request has expired"})
    # The Parquet files go up side by side: either may be the one named.
    with pytest.raises(CommandError, match=r"Error while uploading 'data/\w+\.parquet'"):
        publish(released)
    row = Publication.objects.get()
    assert row.status == PublicationStatus.FAILED and "uploading" in row.error
    hub.fail("POST", r"/commit/", 500, {"error": "Internal Error"})
    with pytest.raises(CommandError, match="answered 500"):
        publish(released)
    assert len(hub.commits(REPO)) == 1  # nothing half-published: no commit at all
    parquet = list(Path(released.path).glob("data/*.parquet"))
    assert len(parquet) >= 2  # the judged pairs and the labels' provenance
    assert len(hub.lfs_puts) == len(parquet)  # the Parquet files are stored, not committed
    publish(released)
    assert "resuming publication" in capsys.readouterr().out
    assert len(hub.commits(REPO)) == 2 and len(hub.lfs_puts) == len(parquet)  # not sent again
    assert Publication.objects.get().status == PublicationStatus.PUBLISHED


def test_a_bad_token_is_refused_clearly_and_never_shown(released, hub, settings, caplog, capsys):
    wrong = "hf_" + "x" * 30
    settings.CROWDVL_HF_TOKEN = wrong
    caplog.set_level(logging.DEBUG)
    with pytest.raises(CommandError) as raised:
        publish(released)
    assert "refused the token (401)" in str(raised.value)
    out = capsys.readouterr()
    row = Publication.objects.get()
    for text in (str(raised.value), out.out, out.err, caplog.text, row.error):
        assert wrong not in text and hub.token not in text
    assert not Path(released.path).joinpath(".publish").exists()
