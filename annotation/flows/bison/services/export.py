"""The BISON export: the verified triples in the official annotation layout, and its manifest
(the job around it is the core's, `annotation/services/release/export_jobs.py`)."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from django.utils import timezone

from annotation.errors import ServiceError
from annotation.flows.bison.selectors import (
    bison_selector_report,
    bison_settings,
    bison_stage_counts,
    bison_verified_triples,
)
from annotation.flows.bison.tally import TRIPLE_COLUMNS, BisonTally, bison_tally, read_triples
from annotation.flows.bison.vocabulary import PAPER
from annotation.json_order import keys_sorted
from annotation.models import Job, Run
from annotation.selectors.arrow_rows import arrow_lists, arrow_numbers, arrow_strings
from annotation.selectors.pseudonyms import run_worker_pseudonyms
from annotation.services.release.export_jobs import (
    ExportParts,
    ExportSpec,
    ExportWork,
    export_job_start,
    export_manifest_crowd,
)
from annotation.services.release.release_tables import table_from_columns
from pipeline.bison import bison_document_json
from pipeline.pair_shuffle import pairs_swapped

BISON_FORMAT = "coco-bison"
JOB_NAME = "bison.export"


def bison_export_start(*, run: Run, release: dict[str, Any] | None = None) -> Job:
    """Start the export job, once the run has verified triples (Dawid-Skene's are known
    once its EM has run over the answers: the tally's, not the selector's list of ids)."""
    if bison_settings(run).aggregation_rule == "dawid_skene":
        verified = bool(bison_tally(run=run).verified.any())
    else:
        verified = bison_verified_triples(run=run).exists()
    if not verified:
        raise ServiceError(f"run {run.pk} has no verified triples to export yet")
    return export_job_start(run=run, spec=BISON_EXPORT, release=release)


# What the export reads of each of the run's triples: the tally's columns (votes are counted
# from the answers, `tally.py`) and the records' ids and file names, in one plain read.
_TRIPLE_COLUMNS = {
    **TRIPLE_COLUMNS,
    "caption_coco": ("caption__coco_id", pa.int64()),
    "positive": ("positive__coco_id", pa.int64()),
    "positive_file": ("positive__file_name", pa.string()),
    "negative": ("negative__coco_id", pa.int64()),
    "negative_file": ("negative__file_name", pa.string()),
}


def _swapped(*, seed: int, pks: list[int]) -> np.ndarray:
    """Per triple, whether its candidates come negative image first: the order
    `random.Random(f"{seed}:{pk}").shuffle([positive, negative])` gives (seeded per run and
    triple, so every export of the run lists them alike), for all triples at once."""
    return pairs_swapped([f"{seed}:{pk}" for pk in pks])


class BisonRecords:
    """The verified triples as the official records, in columns (Arrow, numpy), with each
    record's verification provenance; read with the run's tally."""

    def __init__(self, *, run: Run) -> None:
        triples = read_triples(run=run, columns=_TRIPLE_COLUMNS)
        self.tally = tally = bison_tally(run=run, triples=triples)
        verified = triples.filter(arrow_numbers(tally.verified))
        for name, what in (("caption_coco", "caption"), ("negative", "negative image")):
            if verified.column(name).null_count:
                values = verified.column(name).to_pylist()
                pk = verified.column("pk")[values.index(None)].as_py()
                raise ServiceError(f"run {run.pk}: verified triple {pk} has no {what}")
        self.rows = verified.num_rows
        swap = arrow_numbers(
            _swapped(seed=bison_settings(run).seed, pks=verified.column("pk").to_pylist())
        )
        col = {name: verified.column(name).combine_chunks() for name in verified.column_names}
        self.caption = col["caption_coco"]
        self.true_image = col["positive"]
        # Candidate 0 is the negative image where the seeded shuffle swapped the pair.
        self.candidates = (
            pc.if_else(swap, col["negative"], col["positive"]),
            pc.if_else(swap, col["negative_file"], col["positive_file"]),
            pc.if_else(swap, col["positive"], col["negative"]),
            pc.if_else(swap, col["positive_file"], col["negative_file"]),
        )
        self.votes = tally.votes[tally.verified]
        self.positive_votes = tally.positive[tally.verified]

    def document(self, *, source: str, split: str) -> bytes:
        """The official annotations file's bytes."""
        return bison_document_json(
            caption_ids=self.caption.to_pylist(),
            true_image_ids=self.true_image.to_pylist(),
            candidates=tuple(c.to_pylist() for c in self.candidates),
            source=source,
            split=split,
        )

    def table(self, *, run: Run) -> pa.Table:
        """The `bison_triples` record set: each exported record with its verification's
        provenance (judgments, how many picked the positive image, their share, the
        workers' pseudonyms in the order they answered)."""
        tally = self.tally
        of_verified = tally.verified[tally.answer_rows]
        workers, at = np.unique(tally.answer_workers[of_verified], return_inverse=True)
        names = run_worker_pseudonyms(run=run)
        pseudonyms = arrow_strings([names[w] for w in workers.tolist()])
        return table_from_columns(
            {
                "bison_id": arrow_numbers(np.arange(self.rows, dtype=np.int64)),
                "caption_id": self.caption,
                "true_image_id": self.true_image,
                "image_id_0": self.candidates[0],
                "image_filename_0": self.candidates[1],
                "image_id_1": self.candidates[2],
                "image_filename_1": self.candidates[3],
                "judgments": arrow_numbers(self.votes.astype(np.int32)),
                "positive_judgments": arrow_numbers(self.positive_votes.astype(np.int32)),
                "agreement": _agreement(self.votes, self.positive_votes),
                "workers": arrow_lists(
                    pseudonyms.take(arrow_numbers(at.astype(np.int64))), self.votes
                ),
            }
        )


def _agreement(votes: np.ndarray, positive: np.ndarray) -> pa.Array:
    """Per record, the share of judgments that picked the positive image, rounded as Python
    rounds (`round(positive / votes, 4)`, once per distinct pair of counts)."""
    pairs, at = np.unique(np.stack([votes, positive]), axis=1, return_inverse=True)
    shares = np.array(
        [round(p / v, 4) if v else 0.0 for v, p in pairs.T.tolist()], dtype=np.float64
    )
    return arrow_numbers(shares[at.reshape(-1)], valid=votes > 0)


def _build(work: ExportWork) -> ExportParts:
    run = work.run
    records = BisonRecords(run=run)
    work.progress(50, f"writing {records.rows} records")
    split = str(run.dataset.info.get("split") or bison_settings(run).split or "val2014")
    data = records.document(source="coco", split=split)
    checksum = hashlib.sha256(data).hexdigest()
    name = f"bison_annotations.coco{split}.json"
    return ExportParts(
        manifest=_manifest(
            run=run, records=records.rows, checksum=checksum, name=name, tally=records.tally
        ),
        files={name: data},
        result={"records": records.rows},
        message=f"{records.rows} records -> ",
        main_file=name,
        checksum=checksum,
        tables={"bison_triples": records.table(run=run)},
    )


def _manifest(
    *, run: Run, records: int, checksum: str, name: str, tally: BisonTally
) -> dict[str, Any]:
    counts = bison_stage_counts(run=run, tally=tally)
    pairing = run.jobs.filter(name="bison.pairing", state="succeeded").order_by("-pk").first()
    return {
        "format": BISON_FORMAT,
        "file": name,
        "sha256": checksum,
        "records": records,
        "created_at": timezone.now().isoformat(),
        "run": {
            "id": run.pk,
            "kind": run.kind,
            "name": run.name,
            "config": keys_sorted(run.config),
        },
        "dataset": {
            "name": run.dataset.name,
            "source_file": run.dataset.source_file,
            "sha256": run.dataset.checksum,
        },
        "stage1": {
            **counts["stage1"],
            # Both orders of every distinct nearest-neighbour edge (paper: 2 x 33,782).
            "edges": pairing.result.get("edges") if pairing else None,
            "mutual_edges": pairing.result.get("mutual_edges") if pairing else None,
            "ordered_pairs": counts["stage1"]["pairs"],
            "cosines": keys_sorted(pairing.result.get("cosines")) if pairing else None,
            "warning": pairing.result.get("warning") if pairing else None,
            "embedding_dim": run.embedding_dim,
            "embedding_source": run.embedding_source,
            "params": keys_sorted(pairing.params) if pairing else None,
        },
        "stage2": {
            **counts["stage2"],
            "selectors": bison_selector_report(run=run, outcomes=tally.outcomes),
        },
        "stage3": counts["stage3"],
        **export_manifest_crowd(run=run),
        "batches": [
            {
                "id": b.pk,
                "stage": b.stage,
                "provider": b.provider,
                "hits": b.hits.count(),
                "items_per_hit": b.items_per_hit,
                "assignments_per_hit": b.assignments_per_hit,
                "reward": str(b.reward),
                "qualifications": keys_sorted(b.qualifications),
            }
            for b in run.batches.order_by("pk")
        ],
    }


BISON_EXPORT = ExportSpec(
    job_name=JOB_NAME,
    format=BISON_FORMAT,
    prefix="bison",
    title="COCO-BISON",
    first_message="collecting verified triples",
    build=_build,
    paper=PAPER,
    task_categories=("text-to-image", "image-to-text"),
    # The caption and both images (the candidates' order is seeded per run and triple).
    record_keys={"bison_triples": ("caption_id", "true_image_id", "image_id_0", "image_id_1")},
    provenance_beside=True,
)
