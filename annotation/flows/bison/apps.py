from django.apps import AppConfig

from annotation.flows.bison.vocabulary import BisonStage


class BisonConfig(AppConfig):
    """COCO-BISON: stage 1 pairing, stage 2 caption selection, stage 3 verification."""

    name = "annotation.flows.bison"
    label = "bison"
    verbose_name = "COCO-BISON"

    def ready(self) -> None:
        from annotation.flow_registry import Flow, flow_register, lazy
        from annotation.flows.bison import simulate
        from annotation.flows.bison.selectors import bison_check_config, bison_funnel
        from annotation.flows.bison.services.export import BISON_EXPORT, bison_export_start
        from annotation.flows.bison.services.pairing import pairing_block_args, pairing_start
        from annotation.flows.bison.tasktypes import SelectionTask, VerificationTask
        from annotation.models import RunKind, RunStatus
        from annotation.services.export_jobs import export_spec_register
        from annotation.services.job_recovery import JobSteps, job_steps_register

        job_steps_register(
            JobSteps(
                name="bison.pairing",
                start="bison.pairing_prepare",
                part="bison.pairing_block",
                finish="bison.pairing_finish",
                part_args=pairing_block_args,
                busy_status=RunStatus.PREPARING,
            )
        )
        export_spec_register(BISON_EXPORT)

        from annotation.flows.bison.settings import SETTINGS
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
                check_config=bison_check_config,
                settings=SETTINGS,
                start_export=bison_export_start,
                funnel=bison_funnel,
                run_jobs={
                    "pairing": (
                        "Stage 1: pair images (FastText trained on the captions)",
                        lambda run: pairing_start(run=run),
                    )
                },
            )
        )
