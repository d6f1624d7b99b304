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
