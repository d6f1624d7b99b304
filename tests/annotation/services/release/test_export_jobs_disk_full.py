"""An export to a full disk leaves nothing behind: no half-written data file, no manifest
.tmp, no version folder, no Export row; the job fails with the reason and a retry works."""

import errno
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.flows.bison.services.export import bison_export_start
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Export
from annotation.services.runs.batches import batch_create, batch_publish
from pipeline.simulate import WorkerProfile
from tests.factories import selection_done_factory

pytestmark = pytest.mark.django_db


@pytest.fixture
def verified_run(paired_run):
    selection_done_factory(paired_run, workers=2, accuracy=1.0)
    batch = batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.VERIFICATION, provider="simulated", items_per_hit=2
        )
    )
    simulate_crowd(batch=batch, workers=3, profile=WorkerProfile(accuracy=1.0))
    return paired_run


def everything_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.name != "runs")


def export(run, run_on_commit):
    job = run_on_commit(bison_export_start, run=run)
    job.refresh_from_db()
    return job


@pytest.mark.parametrize("fails", ["data", "manifest.json", "DATASHEET.md"])
def test_no_space_at_any_write_leaves_no_debris(verified_run, run_on_commit, settings, fails):
    import annotation.services.files as files

    real = files.Path.write_bytes

    def full_disk(path, data):
        if fails in (path.name.removesuffix(".tmp"), "data") and (
            fails != "data" or path.name.startswith("bison_annotations")
        ):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real(path, data)

    root = Path(settings.MEDIA_ROOT)
    before = everything_under(root) if root.exists() else []
    files.Path.write_bytes = full_disk
    try:
        with pytest.raises(OSError, match="No space left"):
            export(verified_run, run_on_commit)
    finally:
        files.Path.write_bytes = real
    job = verified_run.jobs.filter(name="bison.export").latest("pk")
    assert job.state == "failed" and "No space left on device" in job.error
    exports = root / "exports"
    leftovers = [p for p in everything_under(root) if p not in before and p.startswith("exports")]
    # Only the (empty) parent folders may remain.
    assert leftovers in ([], ["exports", f"exports/run-{verified_run.pk}"]), leftovers
    assert not Export.objects.filter(run=verified_run).exists()
    # With space again, the export works and takes version 1.
    job = export(verified_run, run_on_commit)
    assert job.state == "succeeded", job.error
    assert Export.objects.get(run=verified_run).version == 1
    assert sorted(p.name for p in (exports / f"run-{verified_run.pk}").iterdir()) == ["bison-v1"]


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_real_full_tmpfs_leaves_no_debris(verified_run, run_on_commit, settings, tmp_path):
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        # Room for one version once the ballast is gone (croissant.json alone is ~25 kB since
        # Croissant 1.1 with its RAI fields and the provenance record set, issue 50).
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)],
        capture_output=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        settings.MEDIA_ROOT = str(mount)
        # Fill the disk to its last page.
        ballast = mount / f"ballast-{uuid.uuid4().hex}"
        with open(ballast, "wb", buffering=0) as handle:
            try:
                while True:
                    handle.write(b"\0" * 4096)
            except OSError:
                pass
        with pytest.raises(OSError):
            export(verified_run, run_on_commit)
        left = [p for p in everything_under(mount) if not p.startswith("ballast")]
        assert left in ([], ["exports"], ["exports", f"exports/run-{verified_run.pk}"]), left
        assert not Export.objects.filter(run=verified_run).exists()
        ballast.unlink()
        job = export(verified_run, run_on_commit)
        assert job.state == "succeeded", job.error
        version = mount / "exports" / f"run-{verified_run.pk}" / "bison-v1"
        assert {p.name for p in version.iterdir()} >= {"manifest.json", "DATASHEET.md"}
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_command_waiting_on_a_job_gives_up_with_a_message(verified_run, settings):
    from django.core.management.base import CommandError

    from annotation.management.base import ServiceCommand
    from annotation.services.jobs.jobs import job_create

    job = job_create(name="bison.export", run=verified_run, params={})
    settings.CROWDVL_JOB_WAIT_SECONDS = 0.3
    with pytest.raises(CommandError, match="gave up waiting: job .* did not finish within 0 s"):
        ServiceCommand().wait_for_job(job, poll=0.05)
