from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.apps import AppConfig

if TYPE_CHECKING:
    import argparse

    from annotation.flow_registry import DemoContext
    from annotation.models import Job, Run
    from annotation.selectors.release.simulated_quality import QualityRow
    from pipeline.simulate import Population


class QualityConfig(AppConfig):
    """Caption-quality judgments (as used to validate CLIP-S and PAC-S): ratings, yes/no
    judgments and pairwise preferences of candidate captions, and metric correlations."""

    name = "annotation.flows.quality"
    label = "quality"
    verbose_name = "Caption-quality judgments"

    def ready(self) -> None:
        # Only light modules here: the demo, the sweep and the export (numpy, pyarrow) are
        # reached through the functions below this class, which import them when first called,
        # so no command or web process pays for them at start-up (issue 46).
        from annotation.flow_registry import Flow, flow_register
        from annotation.flows.quality import inputs, simulate
        from annotation.flows.quality.services.candidates import quality_run_create
        from annotation.flows.quality.tasktypes import (
            QualityBinaryTask,
            QualityPreferenceTask,
            QualityRatingTask,
        )
        from annotation.flows.quality.vocabulary import QualityStage
        from annotation.models import RunKind
        from annotation.selectors.reviews.gold import worker_gold_tally
        from annotation.services.release.export_specs import export_spec_register

        export_spec_register(
            job_name="quality.export",
            spec="annotation.flows.quality.services.export:QUALITY_EXPORT",
        )

        from annotation.flows.quality.settings import SETTINGS, QualitySettings
        from annotation.flows.quality.vocabulary import (
            PAPER,
            STATUS_WORDS,
            SUMMARY,
            QualityItemKind,
        )

        flow_register(
            Flow(
                name="quality",
                run_kind=RunKind.QUALITY,
                stages=tuple(QualityStage.choices),
                item_kinds=tuple(QualityItemKind.choices),
                status_words=STATUS_WORDS,
                summary=SUMMARY,
                paper=PAPER,
                task_types=(QualityRatingTask(), QualityBinaryTask(), QualityPreferenceTask()),
                answerers={
                    QualityStage.RATING: simulate.quality_answer,
                    QualityStage.BINARY: simulate.quality_answer,
                    QualityStage.PREFERENCE: simulate.quality_answer,
                },
                demo_arguments=_demo_arguments,
                demo=_demo,
                quality_sweep=_quality_sweep,
                settings=SETTINGS,
                settings_type=QualitySettings,
                create_run=quality_run_create,
                run_inputs=inputs.INPUTS,
                start_export=_export_start,
                worker_gold=worker_gold_tally,
            )
        )


# The flow's steps in heavy modules (numpy, pyarrow), each imported when first called.


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    from annotation.flows.quality.demo import add_arguments

    add_arguments(parser)


def _demo(ctx: DemoContext) -> None:
    from annotation.flows.quality.demo import run_demo

    run_demo(ctx)


def _quality_sweep(ctx: DemoContext, population: Population) -> list[QualityRow]:
    from annotation.flows.quality.sweep import caption_quality_sweep

    return caption_quality_sweep(ctx, population)


def _export_start(*, run: Run, release: dict[str, Any] | None = None) -> Job:
    from annotation.flows.quality.services.export import quality_export_start

    return quality_export_start(run=run, release=release)
