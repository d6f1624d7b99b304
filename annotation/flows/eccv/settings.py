"""An ECCV Caption run's settings, described for the new-run form, the API and the checks,
what its creation records (the query sample, the split's gallery), and the typed object an
ECCV run's config reads as (`run_settings(run, EccvSettings)`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from annotation.flows.eccv.vocabulary import AGGREGATIONS, GOLD_DEPTH
from annotation.run_settings import (
    CONSENT,
    HOLD_FAST,
    SEED,
    RunSettings,
    Setting,
    declared,
    gold_settings,
)

if TYPE_CHECKING:
    from annotation.models import Run

DEFAULT_AGGREGATION = "majority"  # the paper's reading

SETTINGS = (
    Setting(
        "image_queries",
        "Image queries",
        "Images drawn as queries; each gets candidate captions from every model (the paper: "
        "1,261 of COCO's 5k test images)",
        low=1,
        high=1_000_000,
        unit="images",
        default=100,
    ),
    Setting(
        "caption_queries",
        "Caption queries",
        "Captions drawn as queries; each gets candidate images from every model",
        low=1,
        high=5_000_000,
        unit="captions",
        default=100,
    ),
    Setting(
        "k",
        "Candidates per model",
        "Top-k candidates each model proposes per query (the paper: 5)",
        low=1,
        high=GOLD_DEPTH,
        default=5,
    ),
    Setting(
        "models",
        "Models",
        "How many annotator models propose candidates (the paper: 5)",
        low=1,
        high=50,
        default=2,
    ),
    Setting(
        "judgments_per_pair",
        "Judgments per pair",
        "Workers who judge each candidate pair (the paper: 1); more are majority-voted",
        low=1,
        high=25,
        unit="workers",
        default=1,
    ),
    Setting(
        "aggregation",
        "Aggregation",
        "How judgments make a positive: majority (the paper's reading, ties positive), "
        "weighted_majority (by each worker's gold accuracy), dawid_skene (EM), posterior (with "
        "adaptive redundancy). Use majority: on the calibrated simulated crowd weighted "
        "majority equals it and dawid_skene gains 0.1 point of precision for 0.4 of recall "
        "(and does worse on weak crowds); docs/quality.md, 'The calibrated world'."
        " Dawid-Skene is no better than majority on the realistic crowd and 8-10 points worse"
        " with workers 60 % accurate (issue 48): prefer majority unless a calibration batch"
        " says otherwise.",
        kind="choice",
        choices=AGGREGATIONS,
        default=DEFAULT_AGGREGATION,
        # Left out of a new run's config unless chosen (the datasheet then says "the flow's
        # default rule"): read as None, the default rule (`aggregation_rule`).
        filled=False,
        absent=None,
    ),
    Setting(
        "cxc_threshold",
        "CxC positive threshold",
        "CxC similarity at or above which a CxC pair counts as a positive (ECCV Caption: 3)",
        kind="number",
        low=0.0,
        high=5.0,
        unit="rating points",
        default=3.0,
    ),
    Setting(
        "image_query_set",
        "Image queries from a model's images",
        "Optional: the id of a stored embedding set of this dataset; image queries are drawn "
        "only from the images it encoded (every image-text model ranks every query, so an "
        "image it could not read cannot be a query)",
        low=1,
        high=2_147_483_647,
        advanced=True,
    ),
    Setting(
        "adaptive",
        "Adaptive redundancy",
        "Optional: ask for more judgments only where the posterior is unsure, e.g. "
        '{"start": 1, "cap": 3, "confidence": 0.9}',
        kind="object",
        advanced=True,
    ),
    *gold_settings(categorical=True, ratings=False),
    HOLD_FAST,
    SEED,
    CONSENT,
)


def _ids(key: str, label: str, help: str, default: list[int] | None = None) -> Setting:
    return Setting(key, label, help, kind="list", default=default)


# Recorded by the run's creation (`eccv_run_create`) or set by its command, not on the form.
RECORDED = (
    _ids("query_images", "Image queries", "COCO ids of the image queries, drawn seeded", []),
    _ids("query_captions", "Caption queries", "COCO ids of the caption queries, drawn seeded", []),
    _ids(
        "gallery_images",
        "Gallery",
        "COCO ids of the split's images in the dataset (none: the whole dataset)",
    ),
    Setting(
        "split",
        "Split",
        "A split file's path when the run is created; then what it was: its file, sha256, "
        "image counts and provenance",
        kind="json",
    ),
    Setting(
        "image_query_pool",
        "Image query pool",
        "How many images the image queries were drawn from, where a model's images limited them",
        low=0,
        high=2_147_483_647,
    ),
    Setting(
        "exclusions",
        "Exclusions file",
        "The file of invalid captions and duplicate images the results leave out (none: the "
        "project's own list)",
        kind="text",
    ),
    Setting(
        "original_positives",
        "Original positives",
        "Whether COCO's original image-caption pairs count as positives in the results",
        kind="bool",
        default=True,
    ),
)


@dataclass(frozen=True)
class EccvSettings(RunSettings):
    DECLARED = declared(SETTINGS, RECORDED)

    image_queries: int
    caption_queries: int
    k: int
    models: int
    judgments_per_pair: int
    aggregation: str | None  # None: not chosen, the default rule
    cxc_threshold: float
    image_query_set: int | None
    adaptive: Mapping[str, Any] | None
    query_images: tuple[int, ...]
    query_captions: tuple[int, ...]
    gallery_images: tuple[int, ...] | None  # None: the whole dataset
    split: str | Mapping[str, Any] | None
    image_query_pool: int | None
    exclusions: str | None
    original_positives: bool

    @property
    def aggregation_rule(self) -> str:
        """How judgments make a positive: the chosen rule, else the default one."""
        return self.aggregation or DEFAULT_AGGREGATION

    @property
    def aggregation_chosen(self) -> str | None:
        return self.aggregation

    def expectation_inputs(self) -> dict[str, Any]:
        return {"adaptive": None if self.adaptive is None else dict(self.adaptive)}

    def check(self) -> None:
        super().check()
        if self.adaptive is not None:
            from pipeline.redundancy import RedundancyPolicy

            RedundancyPolicy.from_options(dict(self.adaptive))


def eccv_settings(run: Run) -> EccvSettings:
    """The ECCV run's settings (`run_settings` of an ECCV run)."""
    from annotation.run_settings import run_settings

    return run_settings(run, EccvSettings)
