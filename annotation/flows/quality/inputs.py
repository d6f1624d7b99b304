"""What a caption-quality run takes from its page or the API after it is created: each
model's captions, then the judgment items made from them; scores (CLIP-S, PAC-S-style, ...)
from an image-text model's stored embeddings, for `quality_correlate`. Registered at start-up:
the scores' service (numpy) is imported when applied (issue 46)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from annotation.flow_registry import InputOption, RunInput
from annotation.flows.quality.services.candidates import (
    quality_candidates_import,
    quality_items_create,
)
from annotation.paths import paths_hidden


def _candidates(run: Any, path: Path | None, options: dict[str, Any]) -> tuple[str, None]:
    count = quality_candidates_import(run=run, model=options["model"], path=str(path))
    return f"{options['model']}: {count} captions imported.", None


def _items(run: Any, path: Path | None, options: dict[str, Any]) -> tuple[str, None]:
    made = quality_items_create(run=run)
    return f"Items made: {', '.join(f'{k} {v}' for k, v in made.items())}.", None


def _scores(run: Any, path: Path | None, options: dict[str, Any]) -> tuple[str, None]:
    from annotation.encoders.selectors import embedding_set_get
    from annotation.encoders.services import embedding_set_use_record
    from annotation.flows.quality.services.encoder_scores import quality_encoder_scores

    embedding_set = embedding_set_get(
        set_id=options["set"], dataset=run.dataset, project=run.project
    )
    wanted = [s.strip() for s in (options.get("scores") or "").split(",") if s.strip()]
    embedding_set_use_record(embedding_set=embedding_set, run=run)
    written = quality_encoder_scores(run=run, embedding_set=embedding_set, scores=wanted or None)
    files = ", ".join(f"{name}: {paths_hidden(p)}" for name, p in written.items())
    return f"Scores by {embedding_set.label} written ({files}).", None


INPUTS = {
    "candidates": RunInput(
        label="Import a model's captions",
        apply=_candidates,
        file_help='COCO results format: [{"image_id": ..., "caption": ...}]',
        options={"model": InputOption("Model name", required=True)},
    ),
    "items": RunInput(
        label="Make the judgment items from the imported captions",
        apply=_items,
        file="none",
    ),
    "encoder_scores": RunInput(
        label="Score the candidates with an image-text model's stored embeddings",
        apply=_scores,
        file="none",
        options={
            "set": InputOption(
                "Embedding set id",
                kind="number",
                required=True,
                help="a ready set of this run's dataset (the dataset's embeddings page)",
            ),
            "scores": InputOption(
                "Scores (comma-separated; default: all the model's family allows)",
                help="CLIP: CLIP-S, RefCLIP-S, PAC-S-style, RefPAC-S-style; SigLIP: SigLIP-S, RefSigLIP-S",
            ),
        },
    ),
}
