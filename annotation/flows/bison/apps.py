from django.apps import AppConfig

from annotation.flows.bison.vocabulary import BisonStage


class BisonConfig(AppConfig):
    """COCO-BISON: stage 1 pairing, stage 2 caption selection, stage 3 verification."""

    name = "annotation.flows.bison"
    label = "bison"
    verbose_name = "COCO-BISON"

    def ready(self) -> None:
        # Only light modules here: selectors and services (numpy, pyarrow) are `lazy`, imported
        # when first called, so no command or web process pays for them at start-up (issue 46).
        from annotation.flow_registry import Flow, flow_register, lazy
        from annotation.flows.bison import simulate
        from annotation.flows.bison.tasktypes import SelectionTask, VerificationTask
        from annotation.models import RunKind, RunStatus
        from annotation.services.jobs.job_steps import JobSteps, job_steps_register
        from annotation.services.release.export_specs import export_spec_register

        pairing = "annotation.flows.bison.services.pairing"
        selectors = "annotation.flows.bison.selectors"
        pairing_start = lazy(f"{pairing}:pairing_start")

        job_steps_register(
            JobSteps(
                name="bison.pairing",
                start="bison.pairing_prepare",
                part="bison.pairing_block",
                finish="bison.pairing_finish",
                part_args=lazy(f"{pairing}:pairing_block_args"),
                busy_status=RunStatus.PREPARING,
            )
        )
        export_spec_register(
            job_name="bison.export",
            spec="annotation.flows.bison.services.export:BISON_EXPORT",
        )

        from annotation.flows.bison.settings import SETTINGS, BisonSettings
        from annotation.flows.bison.vocabulary import PAPER, STATUS_WORDS, SUMMARY, BisonItemKind

        flow_register(
            Flow(
                name="bison",
                run_kind=RunKind.BISON,
                stages=tuple(BisonStage.choices),
                item_kinds=tuple(BisonItemKind.choices),
                status_words=STATUS_WORDS,
                summary=SUMMARY,
                paper=PAPER,
                task_types=(SelectionTask(), VerificationTask()),
                answerers={
                    BisonStage.SELECTION: simulate.selection_answer,
                    BisonStage.VERIFICATION: simulate.verification_answer,
                },
                disjoint_stages=(BisonStage.SELECTION, BisonStage.VERIFICATION),
                demo_arguments=lazy("annotation.flows.bison.demo:add_arguments"),
                demo=lazy("annotation.flows.bison.demo:run_demo"),
                datasheet_quality=lazy("annotation.flows.bison.quality:bison_datasheet_quality"),
                quality_sweep=lazy("annotation.flows.bison.demo:bison_quality_sweep"),
                api_urls="annotation.flows.bison.urls",
                settings=SETTINGS,
                settings_type=BisonSettings,
                start_export=lazy("annotation.flows.bison.services.export:bison_export_start"),
                funnel=lazy(f"{selectors}:bison_funnel"),
                run_jobs={
                    "pairing": (
                        "Stage 1: pair images (FastText trained on the captions)",
                        lambda run: pairing_start(run=run),
                    )
                },
            )
        )
