"""A simulated BISON run's export scored against the latent world, beside the closed form."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from annotation.flows.bison.selectors import (
    bison_required_verifiers,
    bison_settings,
    bison_stage_counts,
    bison_verified_triples,
)
from annotation.flows.bison.vocabulary import BisonItemKind, BisonStage
from annotation.models import Caption, Item, Run
from annotation.selectors.release.simulated_quality import (
    QualityRow,
    answer_mixture,
    answering_workers,
    run_world,
)
from pipeline.bison import parse_bison_annotations
from pipeline.expectation import bison_expectation
from pipeline.simulate import WorkerProfile


def _caption_ids(images: set[int], run: Run) -> dict[int, list[int]]:
    ids: dict[int, list[int]] = {}
    for image, caption in Caption.objects.filter(
        dataset=run.dataset, image__coco_id__in=images
    ).values_list("image__coco_id", "coco_id"):
        ids.setdefault(image, []).append(caption)
    return ids


def exported_triples(export_path: Path) -> list[tuple[int, int, int]]:
    """(true image, other image, caption) COCO ids of an exported BISON file."""
    records = parse_bison_annotations(export_path.read_bytes(), file=str(export_path))
    return [
        (
            r.true_image_id,
            next(c[0] for c in r.candidates if c[0] != r.true_image_id),
            r.caption_id,
        )
        for r in records
    ]


def verified_triples(run: Run) -> list[tuple[int, int, int]]:
    """The same triples read from the database (what an export of the run holds)."""
    return [
        (t.positive.coco_id, t.negative.coco_id, t.caption.coco_id)  # type: ignore[union-attr]
        for t in bison_verified_triples(run=run).select_related("positive", "negative", "caption")
    ]


def bison_quality(
    *,
    run: Run,
    triples: list[tuple[int, int, int]],
    team: Mapping[str, WorkerProfile],
    population: str,
) -> list[QualityRow]:
    """Precision of the exported `triples` (their captions describe the true image and not
    the other), recall of stage 3 (valid triples kept) and the triples' validity before
    stage 3. Without a `team` (who the simulated workers were) no expectation is given."""
    world = run_world(run)
    made = list(
        Item.objects.filter(run=run, kind=BisonItemKind.TRIPLE).select_related(
            "positive", "negative", "caption"
        )
    )
    captions = _caption_ids({t.positive.coco_id for t in made} | {t[0] for t in triples}, run)

    def valid(positive: int, negative: int, caption: int) -> bool:
        return caption in world.bison_valid_captions(positive, negative, captions[positive])

    made_valid = sum(
        valid(t.positive.coco_id, t.negative.coco_id, t.caption.coco_id)  # type: ignore[union-attr]
        for t in made
    )
    kept = [valid(*triple) for triple in triples]
    judged_pairs = Item.objects.filter(
        run=run,
        kind=BisonItemKind.IMAGE_PAIR,
        questions__hit__batch__stage=BisonStage.SELECTION,
        questions__answers__isnull=False,
    ).distinct()
    counts = list(judged_pairs.values_list("positive__coco_id", flat=True))
    caption_counts = _caption_ids(set(counts), run)
    verifiers = answering_workers(run=run, stage=BisonStage.VERIFICATION)
    closed = bison_expectation(
        (len(caption_counts[c]) for c in counts),
        world=world,
        stage2=answer_mixture(run=run, stage=BisonStage.SELECTION, team=team),
        stage3=answer_mixture(run=run, stage=BisonStage.VERIFICATION, team=team),
        verifiers=bison_required_verifiers(run),
        stage3_team=len(verifiers) or None,
    )
    # The closed forms assume independent answers at fixed accuracies: none for a harder
    # world's workers (shared difficulty, leaning, fatigue, gold-aware cheating).
    closed_form = bool(team) and all(p.closed_form for p in team.values())
    valid_share = closed.valid_share
    # The closed form of stage 3 is for the paper's unanimity.
    aggregation = bison_settings(run).aggregation_rule
    unanimity = aggregation == "unanimity"
    expected = closed if unanimity and closed_form else None
    stage = bison_stage_counts(run=run)
    funnel = (
        f"pairs {stage['stage2']['pairs_judged']} -> triples {len(made)} "
        f"-> verified {len(triples)} ({aggregation})"
    )
    row = dict(flow="bison", population=population)
    return [
        QualityRow(
            **row,
            measure="triples valid (before st. 3)",
            hits=made_valid,
            total=len(made),
            expected=valid_share if closed_form else None,
            note=funnel,
        ),
        QualityRow(
            **row,
            measure="verified precision",
            hits=sum(kept),
            total=len(kept),
            expected=expected.precision if expected else None,
        ),
        QualityRow(
            **row,
            measure="stage-3 recall",
            hits=sum(kept),
            total=made_valid,
            expected=expected.recall if expected else None,
        ),
    ]


def bison_datasheet_quality(run: Run) -> list[QualityRow]:
    return bison_quality(run=run, triples=verified_triples(run), team={}, population="simulated")
