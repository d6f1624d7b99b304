"""`export_release --to zenodo`: the deposit API through requests against Zenodo's stand-in
(a local HTTP server); published only when every file's checksum matches; lost answers looked
up; a cut-off upload resumed; a bad token refused without showing it (issue 50)."""

import hashlib
import logging

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Publication, PublicationStatus, RemoteCall
from annotation.services.release.release_terms import run_release_terms_set

pytestmark = pytest.mark.django_db


def publish(export, *more):  # type: ignore[no-untyped-def]
    call_command("export_release", str(export.run_id), "--to", "zenodo", *more)


def only_deposition(zenodo):  # type: ignore[no-untyped-def]
    [deposition] = zenodo.depositions.values()
    return deposition


def local_md5(export):  # type: ignore[no-untyped-def]
    from annotation.publish.zenodo import ZenodoDestination

    return {f.name: f.md5 for f in ZenodoDestination(endpoint="x").files(export)}


def test_dry_run_lists_the_bundle_and_the_readable_files_and_calls_nothing(
    released, zenodo, capsys
):  # noqa: E501
    publish(released, "--dry-run")
    out = capsys.readouterr().out
    assert zenodo.calls == [] and not Publication.objects.exists()
    assert f"destination: {zenodo.url}/api/deposit/depositions" in out
    for name in ("eccv-v1.tar.gz", "README.md", "croissant.json", "DATASHEET.md"):
        assert f"  {name}  " in out and " sha256 " in out


def test_publishes_once_every_checksum_matches(released, zenodo, capsys):
    publish(released)
    deposition = only_deposition(zenodo)
    assert deposition["submitted"] and deposition["state"] == "done"
    bucket = zenodo.buckets[zenodo.bucket_of[deposition["id"]]]
    assert {k: hashlib.md5(v).hexdigest() for k, v in bucket.items()} == local_md5(released)
    assert deposition["metadata"]["creators"] == [{"name": "Ada L."}, {"name": "Alan T."}]
    assert deposition["metadata"]["license"] == "cc-by-4.0"
    row = Publication.objects.get()
    assert row.status == PublicationStatus.PUBLISHED and row.remote_id == str(deposition["id"])
    assert row.remote_url.endswith(f"/records/{deposition['id']}")
    calls = len(zenodo.calls)
    publish(released)
    assert "already published" in capsys.readouterr().out and len(zenodo.calls) == calls


def test_lost_answers_to_create_and_publish_are_looked_up(released, zenodo):
    zenodo.lose("POST", r"^/api/deposit/depositions$")
    zenodo.lose("POST", r"/actions/publish$")
    publish(released)
    deposition = only_deposition(zenodo)  # made once, found by its notes
    assert deposition["submitted"]
    assert [p for m, p in zenodo.calls if m == "POST"].count(
        f"/api/deposit/depositions/{deposition['id']}/actions/publish"
    ) == 1
    assert set(RemoteCall.objects.values_list("operation", "state")) == {
        ("create deposition", "done"),
        ("publish", "done"),
    }


def test_a_cut_off_upload_fails_unpublished_then_resumes(released, zenodo, capsys):
    zenodo.fail(
        "PUT",
        r"^/api/files/.+/README\.md$",
        500,
        {"status": 500, "message": "Internal Server Error"},
    )  # noqa: E501
    with pytest.raises(CommandError, match="Zenodo refused PUT .*README.md: 500"):
        publish(released)
    deposition = only_deposition(zenodo)
    assert not deposition["submitted"]  # never published with a file missing
    row = Publication.objects.get()
    assert row.status == PublicationStatus.FAILED and row.files_done == ["eccv-v1.tar.gz"]
    publish(released)
    assert "resuming publication" in capsys.readouterr().out
    assert only_deposition(zenodo)["submitted"]
    assert zenodo.file_puts.count("eccv-v1.tar.gz") == 1  # already there: not sent again


def test_a_foreign_file_in_the_draft_stops_the_publish(released, zenodo):
    zenodo.fail("POST", r"/actions/publish$", 400, {"status": 400, "message": "x"})
    with pytest.raises(CommandError):
        publish(released)
    deposition = only_deposition(zenodo)
    zenodo.buckets[zenodo.bucket_of[deposition["id"]]]["stray.txt"] = b"not ours"
    with pytest.raises(CommandError, match="not ours: stray.txt"):
        publish(released)
    assert not only_deposition(zenodo)["submitted"]


def test_a_bad_token_is_refused_clearly_and_never_shown(released, zenodo, settings, caplog, capsys):  # noqa: E501
    wrong = "z" * 60
    settings.CROWDVL_ZENODO_TOKEN = wrong
    caplog.set_level(logging.DEBUG)
    with pytest.raises(CommandError) as raised:
        publish(released)
    assert "401" in str(raised.value) and "ZENODO_TOKEN missing, wrong or expired" in str(
        raised.value
    )  # noqa: E501
    out = capsys.readouterr()
    for text in (str(raised.value), out.out, out.err, caplog.text, Publication.objects.get().error):
        assert wrong not in text and zenodo.token not in text


def test_without_creators_or_license_nothing_is_sent(judged, run_on_commit, zenodo):
    from tests.annotation.flows.eccv.test_eccv_results import export_of

    unlicensed = export_of(judged, run_on_commit)
    with pytest.raises(CommandError, match="has no license"):
        publish(unlicensed)
    run_release_terms_set(run=judged, release={"license": "cc-by-4.0"})
    export_of(judged, run_on_commit)
    with pytest.raises(CommandError, match="Zenodo needs the creators' names"):
        publish(unlicensed, "--export-version", "2")
    assert zenodo.calls == []
