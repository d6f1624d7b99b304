"""A release a venue accepts (issue 31), for each flow's export: the Parquet record sets read
back (pandas and `datasets`) equal the papers' own files and carry each label's provenance."""

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.flows.bison.services.export import bison_export_start
from annotation.flows.bison.vocabulary import BisonStage
from annotation.flows.cxc.services.export import cxc_export_start
from annotation.flows.cxc.vocabulary import CxcStage
from annotation.flows.quality.services.export import quality_export_start
from annotation.flows.quality.vocabulary import QualityStage
from annotation.models import Export, JobState
from annotation.services.runs.batches import batch_create, batch_publish
from pipeline.simulate import WorkerProfile
from tests.annotation.flows.cxc.test_cxc_flow import cxc_run, rate_all, sampled  # noqa: F401
from tests.annotation.flows.eccv.test_eccv_results import export_of, judged  # noqa: F401
from tests.annotation.flows.quality.test_quality_flow import quality_run  # noqa: F401
from tests.annotation.release_checks import provenance_check, release_tables
from tests.factories import selection_done_factory

pytestmark = pytest.mark.django_db


def exported_folder(start, run, run_on_commit) -> Path:  # type: ignore[no-untyped-def]
    job = run_on_commit(start, run=run)
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED, job.error
    path = Path(Export.objects.get(pk=job.result["export"]).path)
    return path if path.is_dir() else path.parent


def test_bison_triples_table_matches_the_official_file(paired_run, run_on_commit, tmp_path):
    selection_done_factory(paired_run, workers=2, accuracy=1.0)
    batch = batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.VERIFICATION, provider="simulated", items_per_hit=2
        )
    )
    simulate_crowd(batch=batch, workers=6, profile=WorkerProfile(accuracy=1.0))
    folder = exported_folder(bison_export_start, paired_run, run_on_commit)
    triples = release_tables(folder, tmp_path)["bison_triples"]
    provenance = provenance_check(folder, paired_run)
    # Every verifier of a triple is a provenance row of stage 3 on that triple's images.
    verifying = provenance[provenance["stage"] == BisonStage.VERIFICATION]
    assert sorted(w for ws in triples["workers"] for w in ws) == sorted(verifying["worker"])
    document = json.loads((folder / "bison_annotations.cocoval2014.json").read_text())
    assert len(document["data"]) == len(triples)
    for record, row in zip(document["data"], triples.itertuples(), strict=True):
        assert (record["bison_id"], record["caption_id"], record["true_image_id"]) == (
            row.bison_id,
            row.caption_id,
            row.true_image_id,
        )
        assert [c["image_id"] for c in record["image_candidates"]] == [
            row.image_id_0,
            row.image_id_1,
        ]
        assert row.judgments == len(row.workers) >= 2 and row.positive_judgments == row.judgments
        assert row.agreement == 1.0


def test_eccv_pairs_table_matches_the_jsonl(judged, run_on_commit, tmp_path):  # noqa: F811
    folder = Path(export_of(judged, run_on_commit).path)
    pairs = release_tables(folder, tmp_path)["eccv_judged_pairs"]
    provenance = provenance_check(folder, judged)
    # Each judgment names the models that proposed its pair, as the pairs table does.
    models = {(r.image_id, r.caption_id): sorted(set(r.models)) for r in pairs.itertuples()}
    for row in provenance.itertuples():
        assert sorted(row.proposed_by) == models[(row.image_id, row.caption_id)]
        assert len(row.proposer_checkpoint_sha256) == len(row.proposed_by)
    lines = [json.loads(x) for x in (folder / "eccv_judged_pairs.jsonl").read_text().splitlines()]
    assert len(lines) == len(pairs)
    for line, row in zip(lines, pairs.itertuples(), strict=True):
        assert (line["image_id"], line["caption_id"], line["positive"]) == (
            row.image_id,
            row.caption_id,
            row.positive,
        )
        assert [a["worker"] for a in line["answers"]] == list(row.workers)
        assert row.judgments == len(line["answers"]) > 0
        assert [p["rank"] for p in line["proposals"]] == list(row.ranks)
        assert 0.5 <= row.agreement <= 1.0


def test_cxc_pairs_table_has_every_rating_and_matches_the_csvs(
    cxc_run,  # noqa: F811
    run_on_commit,
    tmp_path,
):
    sampled(cxc_run, run_on_commit)
    rate_all(cxc_run, CxcStage.SIS)
    rate_all(cxc_run, CxcStage.STS)
    rate_all(cxc_run, CxcStage.SITS)
    folder = exported_folder(cxc_export_start, cxc_run, run_on_commit)
    pairs = release_tables(folder, tmp_path)["cxc_pairs"]
    provenance_check(folder, cxc_run)
    published = [
        (kind, *row)
        for kind in ("sis", "sts", "sits")
        for row in list(csv.reader((folder / f"{kind}_val.csv").open()))[1:]
    ]
    assert [
        (r.kind, r.first, r.second, f"{r.agg_score:.2f}", r.sampling_method)
        for r in pairs.itertuples()
    ] == published
    # Every counted rating, with its worker, as in ratings.jsonl (gold ratings left out).
    jsonl = [json.loads(x) for x in (folder / "ratings.jsonl").read_text().splitlines()]
    counted = [r for r in jsonl if not r["gold"]]
    assert pairs["raters"].sum() == len(counted) == sum(len(r) for r in pairs["ratings"])
    assert Counter(r["rating"] for r in counted) == Counter(
        int(v) for ratings in pairs["ratings"] for v in ratings
    )
    assert Counter(r["worker"] for r in counted) == Counter(
        w for workers in pairs["workers"] for w in workers
    )
    for row in pairs.itertuples():
        assert abs(sum(row.ratings) / len(row.ratings) - row.agg_score) <= 0.005 + 1e-9
        assert row.spread >= 0 and row.model_low95 <= row.model_score <= row.model_high95


def test_quality_tables_match_the_csvs(quality_run, run_on_commit, tmp_path):  # noqa: F811
    for stage, per_hit in (
        (QualityStage.RATING, 3),
        (QualityStage.BINARY, 3),
        (QualityStage.PREFERENCE, 5),
    ):
        batch = batch_publish(
            batch=batch_create(
                run=quality_run, stage=stage, provider="simulated", assignments_per_hit=per_hit
            )
        )
        simulate_crowd(batch=batch, workers=per_hit + 2, profile=WorkerProfile(accuracy=0.9))
    folder = exported_folder(quality_export_start, quality_run, run_on_commit)
    tables = release_tables(folder, tmp_path)
    provenance_check(folder, quality_run)
    tables.pop("label_provenance")
    assert set(tables) == {str(s) for s in QualityStage}
    for stage, table in tables.items():
        rows = list(csv.DictReader((folder / f"{stage}.csv").open()))
        assert len(rows) == len(table)
        for row, got in zip(rows, table.to_dict("records"), strict=True):
            assert row["image"] == got["image"]
            assert got["judgments"] == len(got["workers"])
            if "ratings" in row:
                assert row["ratings"] == ";".join(f"{v:g}" for v in got["ratings"])
            if "yes" in row:
                assert (int(row["yes"]), int(row["no"])) == (got["yes"], got["no"])
                assert got["yes"] + got["no"] == got["judgments"]
            if "votes_first" in row:
                assert int(row["votes_first"]) + int(row["votes_second"]) == got["judgments"]


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


def test_the_exports_page_renders_the_datasheets_tables():
    from annotation.templatetags.datasheet import datasheet_html

    html = datasheet_html(
        "- Counts:\n\n| what | value |\n|---|---|\n| pairs | 6 |\n| <b> | `x` |\n"
    )
    assert "<table" in html and "<th>what</th><th>value</th>" in html
    assert "<td>pairs</td><td>6</td>" in html and "&lt;b&gt;" in html and "</table>" in html
    assert "---" not in html  # the header's rule is no row


def test_changes_match_records_by_key_and_compare_every_column():
    import pyarrow as pa

    from annotation.services.release.release_changes import changes_between

    def table(rows):  # type: ignore[no-untyped-def]
        return pa.table(
            {
                "a": pa.array([r[0] for r in rows], pa.int64()),
                "b": pa.array([r[1] for r in rows], pa.int64()),
                "score": pa.array([r[2] for r in rows], pa.float64()),
                "ratings": pa.array([r[3] for r in rows], pa.list_(pa.int8())),
                "workers": pa.array([r[4] for r in rows], pa.list_(pa.string())),
            }
        )

    old = table(
        [(1, 1, 2.0, [1, 3], ["w-x", "w-y"]), (1, 2, None, [2], ["w-x"]), (2, 1, 1.0, [1], ["w"])]
    )
    new = table(
        [
            (1, 1, 2.0, [1, 3], ["w-x", "w-y"]),  # unchanged
            (1, 2, None, [2, 4], ["w-x", "w-z"]),  # a rating added: changed (no score twice)
            (3, 3, 4.0, [4], ["w-z"]),  # added; (2, 1) removed
        ]
    )
    assert changes_between(old=old, new=new, key=("a", "b")) == {
        "added": 1,
        "removed": 1,
        "changed": 1,
        "unchanged": 1,
    }
    assert changes_between(old=new, new=new, key=("a", "b"))["unchanged"] == 3


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


def test_datasheet_cells_read_as_words_small_tables_or_counts_never_json():
    from annotation.services.release.datasheet_cells import cell_text, pairs
    from tests.annotation.release_checks import json_outside_blocks

    selectors = [{"worker": f"w-{n}", "judged": 10 + n, "rejected": n} for n in range(3)]
    stage = {
        "stage1": {
            "cosines": {"nn_p5": 0.93, "degenerate": False},
            "params": {"vectors_path": None, "locales": ["US", "GB"]},
        },
        "stage2": {"selectors": selectors, "judged": 33},
        "ratings": list(range(500)),
    }
    lines = pairs(stage)
    assert "| stage1.cosines | nn_p5 0.93, degenerate no |" in lines
    assert "| stage1.params | vectors_path none, locales (US, GB) |" in lines
    # A short list of records: counted in its cell, then its own table under its key.
    assert "| stage2.selectors | 3 rows, table `stage2.selectors` below |" in lines
    at = lines.index("`stage2.selectors` (manifest.json: stage2.selectors):")
    assert lines[at + 2 : at + 7] == [
        "| worker | judged | rejected |",
        "|---|---|---|",
        "| w-0 | 10 | 0 |",
        "| w-1 | 11 | 1 |",
        "| w-2 | 12 | 2 |",
    ]
    # Long values are counted, with where the manifest has them.
    assert "| ratings | 500 values from 0 to 499 (see manifest.json: ratings) |" in lines
    many = [{"worker": f"w-{n}", "judged": n} for n in range(21)]
    assert cell_text({"a": many, "b": 1}, key="stage2") == "2 entries (see manifest.json: stage2)"
    assert pairs({"selectors": many}, source="stage2")[2:] == [
        "| selectors | 21 rows (see manifest.json: stage2.selectors) |"
    ]
    assert not json_outside_blocks("\n".join(lines))
    # The check refuses what the datasheet wrote before: JSON in cells and sentences.
    for old in (
        '| stage1.params | {"vectors_path": null, "dim": 100} |',
        "| histogram | [0, 6, 12] |",
        "| bison_selection | default | false |",
        "- Exclusions: []",
    ):
        assert json_outside_blocks(f"# Datasheet\n{old}\n```\n[1, 2]\n```\n") == [old]
