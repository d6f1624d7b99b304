"""`manage.py export_release`: a version of a run's export packed as one archive with its
checksums."""

from pathlib import Path

import pytest

from tests.annotation.flows.eccv.test_eccv_results import export_of, judged  # noqa: F401

pytestmark = pytest.mark.django_db


def test_a_release_bundle_packs_a_version_with_checksums(judged, run_on_commit, capsys):  # noqa: F811
    import hashlib
    import tarfile

    from django.core.management import call_command
    from django.core.management.base import CommandError

    export = export_of(judged, run_on_commit)
    call_command("export_release", str(judged.pk))
    name, _, sha = capsys.readouterr().out.split()
    bundle = Path(export.path).parent / name
    assert name == "eccv-v1.tar.gz" and hashlib.sha256(bundle.read_bytes()).hexdigest() == sha
    with tarfile.open(bundle) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    sums = dict(
        reversed(line.split("  ", 1))
        for line in members["eccv-v1/SHA256SUMS"].decode().splitlines()
    )
    assert "data/eccv_judged_pairs.parquet" in sums and "croissant.json" in sums
    for path, digest in sums.items():
        assert hashlib.sha256(members[f"eccv-v1/{path}"]).hexdigest() == digest
    with pytest.raises(CommandError, match="--export-version: run .* has no export version 9"):
        call_command("export_release", str(judged.pk), "--export-version", "9")
