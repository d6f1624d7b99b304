"""What a caption-quality run takes from its page or the API after it is created: each
model's captions, then the judgment items made from them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from annotation.flow_registry import InputOption, RunInput
from annotation.flows.quality.services.candidates import (
    quality_candidates_import,
    quality_items_create,
)


def _candidates(run: Any, path: Path | None, options: dict[str, Any]) -> tuple[str, None]:
    count = quality_candidates_import(run=run, model=options["model"], path=str(path))
    return f"{options['model']}: {count} captions imported.", None


def _items(run: Any, path: Path | None, options: dict[str, Any]) -> tuple[str, None]:
    made = quality_items_create(run=run)
    return f"Items made: {', '.join(f'{k} {v}' for k, v in made.items())}.", None


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
}
