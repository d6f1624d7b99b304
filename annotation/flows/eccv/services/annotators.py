"""Registering an ECCV run's machine annotators (the models that propose candidates)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from annotation.flows.eccv.models import Annotator, AnnotatorKind
from annotation.flows.eccv.services.embeddings import minilm_package
from annotation.flows.eccv.services.rankings import annotator_ranking
from annotation.models import EventAction, Run
from annotation.services.checks import check_name, check_stored_json
from annotation.services.events import event_record
from pipeline.errors import InputError


def eccv_annotator_add(
    *, run: Run, name: str, kind: str, source: str = "", params: dict[str, Any] | None = None
) -> Annotator:
    """Register a machine annotator; imported files are validated completely now."""
    check_name(name, field="name", limit=100)
    if not name.strip():
        raise InputError("an annotator needs a name", field="name")
    check_name(source, field="source", limit=500)
    check_stored_json(params or {}, field="params")
    if kind not in AnnotatorKind.values:
        raise InputError(f"unknown annotator kind {kind!r}", field="kind")
    if kind in (AnnotatorKind.EMBEDDINGS, AnnotatorKind.RANKINGS, AnnotatorKind.IMAGE_TEXT):
        if not source or not Path(source).is_file():
            raise InputError("file does not exist", file=source or "(none)", field="source")
        annotator = Annotator(run=run, name=name, kind=kind, source=source, params=params or {})
        annotator_ranking(annotator=annotator)  # validate before writing anything
    elif kind == AnnotatorKind.MINILM:
        minilm_package()  # a clear message now if the optional extra is missing
    annotator, _ = Annotator.objects.update_or_create(
        run=run, name=name, defaults={"kind": kind, "source": source, "params": params or {}}
    )
    event_record(
        action=EventAction.ECCV_ANNOTATOR_ADDED, run=run, data={"name": name, "kind": kind}
    )
    return annotator
