from django.apps import AppConfig


class QualityConfig(AppConfig):
    """Caption-quality judgments (as used to validate CLIP-S and PAC-S): ratings, yes/no
    judgments and pairwise preferences of candidate captions, and metric correlations."""

    name = "annotation.flows.quality"
    label = "quality"
    verbose_name = "Caption-quality judgments"

    def ready(self) -> None:
        # Only light modules here: the export (numpy, pyarrow) is `lazy`, imported when first
        # called, so no command or web process pays for it at start-up (issue 46).
        from annotation.flow_registry import Flow, flow_register, lazy
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
                demo_arguments=lazy("annotation.flows.quality.demo:add_arguments"),
                demo=lazy("annotation.flows.quality.demo:run_demo"),
                quality_sweep=lazy("annotation.flows.quality.sweep:caption_quality_sweep"),
                settings=SETTINGS,
                settings_type=QualitySettings,
                create_run=quality_run_create,
                run_inputs=inputs.INPUTS,
                start_export=lazy("annotation.flows.quality.services.export:quality_export_start"),
                worker_gold=worker_gold_tally,
            )
        )
