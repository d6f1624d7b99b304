"""A release's terms (annotation/services/release/release_terms.py, issue 31): unlicensed by
default, then the run's terms, and an export's own from the API, the page's form and the CLI,
the same in the manifest, Croissant, the Parquet metadata, the card and the datasheet; each
version records its predecessor and what changed."""

import json
from pathlib import Path

import pytest

from annotation.models import Export
from tests.annotation.flows.eccv.test_eccv_results import export_of, judged  # noqa: F401

pytestmark = pytest.mark.django_db


def test_terms_unlicensed_by_default_then_per_run_export_form_api_and_cli(
    judged,  # noqa: F811
    run_on_commit,
    admin_client,
    tmp_path,
):
    import pyarrow.parquet as pq
    from huggingface_hub import DatasetCard

    from annotation.flows.eccv.management.commands.eccv_export import Command
    from annotation.flows.eccv.services.export import eccv_export_start
    from annotation.management.release_options import release_options
    from annotation.services.release.release_terms import run_release_terms_set

    def terms_of(export: Export) -> tuple[str, str, str, dict, str]:
        folder = Path(export.path)
        card = DatasetCard((folder / "README.md").read_text()).data.to_dict()
        croissant = json.loads((folder / "croissant.json").read_text())
        meta = pq.read_schema(folder / "data" / "eccv_judged_pairs.parquet").metadata
        return (
            export.manifest["release"]["license"],
            croissant["license"],
            meta[b"license"].decode(),
            card,
            (folder / "DATASHEET.md").read_text(),
        )

    first = export_of(judged, run_on_commit)
    manifest, croissant, parquet, card, sheet = terms_of(first)
    assert manifest == croissant == parquet == "unlicensed"
    # Croissant 1.1's data-use conditions: no license, no use permitted.
    unlicensed = json.loads((Path(first.path) / "croissant.json").read_text())["usageInfo"]
    assert unlicensed["odrl:prohibition"]["odrl:action"] == {"@id": "odrl:use"}
    assert "odrl:permission" not in unlicensed
    assert card["license"] == "other" and card["license_name"] == "unlicensed"
    assert "**unlicensed**" in sheet and "CC BY 4.0" in sheet  # the sources' terms stated
    assert first.run.jobs.get(result__export=first.pk).message.startswith("UNLICENSED")
    assert "UNLICENSED" in (Path(first.path) / "README.md").read_text()

    # Each version records its predecessor and what changed, records matched by their key.
    changes = first.manifest["changes"]
    rows = changes["record_sets"]["eccv_judged_pairs"]["rows"]
    assert changes["previous_version"] is None
    assert changes["record_sets"]["eccv_judged_pairs"]["added"] == rows > 0
    assert "first version" in (Path(first.path) / "CHANGES.md").read_text()
    run_release_terms_set(
        run=judged, release={"license": "cc-by-4.0", "creators": "Ada L.; Alan T.", "citation": "X"}
    )
    second = export_of(judged, run_on_commit)
    manifest, croissant, parquet, card, _ = terms_of(second)
    assert manifest == parquet == card["license"] == "cc-by-4.0"
    assert croissant == "https://spdx.org/licenses/CC-BY-4.0.html"  # Croissant: a known URL
    again = second.manifest["changes"]
    assert again["previous_version"] == 1
    assert again["record_sets"]["eccv_judged_pairs"] == {
        "key": ["image_id", "caption_id"],
        "rows": rows,
        "previous_rows": rows,
        "added": 0,
        "removed": 0,
        "changed": 0,
        "unchanged": rows,
    }
    assert "eccv-caption v2 against v1" in (Path(second.path) / "CHANGES.md").read_text()
    document = json.loads((Path(second.path) / "croissant.json").read_text())
    assert [c["name"] for c in document["creator"]] == ["Ada L.", "Alan T."]
    # citeAs is BibTeX: the researcher's citation text (not BibTeX) becomes its note.
    assert document["citeAs"].startswith("@misc{") and "note = {X}" in document["citeAs"]
    assert "author = {Ada L. and Alan T.}" in document["citeAs"]
    # CC BY: general research use (DUO) with attribution as a duty (ODRL), no NC constraint.
    permission = document["usageInfo"]["odrl:permission"]
    assert permission["odrl:action"]["@id"] == "duo:0000042"
    assert permission["odrl:duty"][0]["odrl:action"] == {"@id": "odrl:attribute"}
    assert "odrl:constraint" not in permission
    assert second.manifest["release"]["creators"] == [
        "Ada L.",
        "Alan T.",
    ]

    # The export's own terms win over the run's: from the API, the page's form, the CLI.
    response = run_on_commit(
        admin_client.post,
        f"/api/runs/{judged.pk}/exports/",
        {"license": "cc-by-sa-4.0", "creators": ["Bo"]},
        content_type="application/json",
    )
    assert response.status_code == 202, response.content
    assert terms_of(Export.objects.latest("pk"))[0] == "cc-by-sa-4.0"
    response = run_on_commit(
        admin_client.post, f"/runs/{judged.pk}/exports/new/", {"license": "odc-by"}
    )
    assert response.status_code == 302
    assert terms_of(Export.objects.latest("pk"))[0] == "odc-by"
    parser = Command().create_parser("manage.py", "eccv_export")
    opts = vars(parser.parse_args([str(judged.pk), "--license", "mit", "--creator", "C"]))
    run_on_commit(eccv_export_start, run=judged, release=release_options(opts))
    latest = Export.objects.latest("pk")
    assert terms_of(latest)[0] == "mit" and latest.manifest["release"]["creators"] == ["C"]
