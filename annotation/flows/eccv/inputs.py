"""What an ECCV run takes from its page or the API after it is created: the models that
propose candidates (also an image-text model's stored embeddings of the run's dataset), and
CxC ratings as extra positives (`Flow.run_inputs`). Registered at start-up: each input imports
its service when applied (issue 46)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from annotation.extras import extra_missing
from annotation.flow_registry import InputOption, RunInput
from annotation.flows.eccv.models import AnnotatorKind
from pipeline.errors import InputError


def _annotator(run: Any, path: Path | None, options: dict[str, Any]) -> tuple[str, None]:
    from annotation.flows.eccv.services.annotators import eccv_annotator_add

    if options["kind"] in (AnnotatorKind.EMBEDDINGS, AnnotatorKind.RANKINGS) and path is None:
        raise InputError(f"a model of kind {options['kind']} needs its file", field="file")
    params = {"dim": int(options["dim"])} if options.get("dim") else {}
    annotator = eccv_annotator_add(
        run=run,
        name=options["name"],
        kind=options["kind"],
        source=str(path) if path else "",
        params=params,
    )
    return f"Model {annotator.name} ({annotator.kind}) added.", None


def _kinds_unavailable() -> dict[str, str]:
    """The built-in MiniLM needs its extra (the page offers it disabled, saying so)."""
    missing = extra_missing("minilm")
    return {AnnotatorKind.MINILM: missing} if missing else {}


def _encoder(run: Any, path: Path | None, options: dict[str, Any]) -> tuple[str, None]:
    from annotation.encoders.selectors import embedding_set_get
    from annotation.flows.eccv.services.encoder_annotators import eccv_encoder_annotator_add

    embedding_set = embedding_set_get(
        set_id=options["set"], dataset=run.dataset, project=run.project
    )
    annotator = eccv_encoder_annotator_add(
        run=run, embedding_set=embedding_set, name=options.get("name") or ""
    )
    return f"Model {annotator.name} ({annotator.kind}) added from stored embeddings.", None


def _cxc(run: Any, path: Path | None, options: dict[str, Any]) -> tuple[str, None]:
    from annotation.flows.eccv.services.cxc_positives import eccv_cxc_import

    count = eccv_cxc_import(
        run=run,
        path=str(path),
        threshold=options.get("threshold"),
        skip_unknown=bool(options.get("skip_unknown")),
    )
    return f"{count} CxC caption-image ratings imported as positives.", None


INPUTS = {
    "annotator": RunInput(
        label="Add a model that proposes candidates",
        apply=_annotator,
        file="optional",
        fields={"source": "file"},
        file_help=(
            "embeddings: .npz with image_ids, image_embeddings, caption_ids, "
            'caption_embeddings; rankings: .json {"i2t": {image: [captions]}, "t2i": '
            "{caption: [images]}}; none for the built-in fasttext and minilm"
        ),
        options={
            "name": InputOption("Name", required=True),
            "kind": InputOption(
                "Kind",
                kind="choice",
                choices=tuple(AnnotatorKind.values),
                required=True,
                help="embeddings and rankings come in a file; fasttext and minilm are built in",
                unavailable=_kinds_unavailable,
            ),
            "dim": InputOption("fasttext: vector dimension", kind="number"),
        },
    ),
    "encoder": RunInput(
        label="Add an image-text model from stored embeddings",
        apply=_encoder,
        file="none",
        options={
            "set": InputOption(
                "Embedding set id",
                kind="number",
                required=True,
                help="a ready set of this run's dataset (the dataset's embeddings page)",
            ),
            "name": InputOption("Name (default: <model>@<checkpoint sha256, 12 digits>)"),
        },
    ),
    "cxc": RunInput(
        label="Import CxC caption-image ratings as positives",
        apply=_cxc,
        file_help="CxC's sits file (CSV: caption, image, agg_score, ...)",
        options={
            "threshold": InputOption(
                "Lowest rating kept (default: the run's cxc_threshold)", "number"
            ),
            "skip_unknown": InputOption("Skip ids this dataset does not hold", kind="bool"),
        },
    ),
}
