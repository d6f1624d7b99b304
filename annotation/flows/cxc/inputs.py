"""What a CxC run takes from its page or the API after it is created: the image embeddings
that drive intramodal sampling (the sampling job), and gold pairs with known ratings. Registered
at start-up: each input imports its service when applied (issue 46)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from annotation.flow_registry import InputOption, RunInput
from annotation.flows.cxc.vocabulary import CxcStage
from pipeline.errors import InputError

STAGES = {"sis": CxcStage.SIS, "sts": CxcStage.STS, "sits": CxcStage.SITS}


def _sample(run: Any, path: Path | None, options: dict[str, Any]) -> tuple[str, Any]:
    from annotation.flows.cxc.services.sampling import cxc_sample_start

    job = cxc_sample_start(
        run=run,
        image_embeddings_path=str(path) if path else None,
        standin=bool(options.get("standin")),
    )
    return f"Sampling job {job.pk} started.", job


def _sample_encoder(run: Any, path: Path | None, options: dict[str, Any]) -> tuple[str, Any]:
    from annotation.encoders.selectors import embedding_set_get
    from annotation.flows.cxc.services.encoder_sampling import cxc_sample_from_encoder

    embedding_set = embedding_set_get(
        set_id=options["set"], dataset=run.dataset, project=run.project
    )
    caption_set = None
    if options.get("caption_set") not in (None, ""):
        try:
            caption_set = embedding_set_get(
                set_id=options["caption_set"], dataset=run.dataset, project=run.project
            )
        except InputError as exc:  # the selector names `set`; this is the caption one
            raise InputError(exc.message, field="caption_set") from None
    job = cxc_sample_from_encoder(run=run, embedding_set=embedding_set, caption_set=caption_set)
    text = caption_set.label if caption_set else "FastText or the joint model (run setting)"
    return f"Sampling job {job.pk} started with {embedding_set.label} (captions: {text}).", job


def _gold(run: Any, path: Path | None, options: dict[str, Any]) -> tuple[str, None]:
    from annotation.flows.cxc.services.sampling import cxc_gold_import, cxc_gold_note

    count = cxc_gold_import(run=run, path=str(path), stage=STAGES[options["stage"]])
    return f"{count} gold pairs for {options['stage']}{cxc_gold_note(run=run)}.", None


INPUTS = {
    "sample": RunInput(
        label="Sample the pairs to rate (intramodal sampling job)",
        apply=_sample,
        file="optional",
        file_help="image embeddings: .npz with image_ids and image_embeddings",
        fields={"image_embeddings": "file"},
        options={
            "standin": InputOption(
                "No embeddings: use the named stand-in (seeded random image vectors; "
                "said in the manifest)",
                kind="bool",
            )
        },
    ),
    "sample_encoder": RunInput(
        label="Sample the pairs to rate from an image-text model's stored embeddings",
        apply=_sample_encoder,
        file="none",
        options={
            "set": InputOption(
                "Embedding set id",
                kind="number",
                required=True,
                help="a ready set of this run's dataset (the dataset's embeddings page): its "
                "image embeddings give the image similarity",
            ),
            "caption_set": InputOption(
                "Caption embedding set id (optional)",
                kind="number",
                help="another model's ready set whose caption embeddings give the caption "
                "similarity; left empty: FastText trained on the dataset's captions (CxC used "
                "different encoders for images and captions; one model for both only with the "
                "run setting sampling_encoders = joint)",
            ),
        },
    ),
    "gold": RunInput(
        label="Import CxC's published ratings (gold pairs with gold_source 'paper')",
        apply=_gold,
        file_help="a CxC CSV (sis, sts or sits) with agg_score; pairs outside this dataset "
        "are skipped",
        options={
            "stage": InputOption("Stage", kind="choice", choices=tuple(STAGES), required=True)
        },
    ),
}
