from django.apps import AppConfig


class EccvConfig(AppConfig):
    """ECCV Caption: machine-proposed candidates judged by workers, with gold items."""

    name = "annotation.flows.eccv"
    label = "eccv"
    verbose_name = "ECCV Caption"

    def ready(self) -> None:
        from annotation.flow_registry import Flow, flow_register, lazy
        from annotation.flows.eccv import inputs, simulate
        from annotation.flows.eccv.selectors import (
            eccv_answer_shares,
            eccv_funnel,
            eccv_worker_gold,
        )
        from annotation.flows.eccv.services.export import eccv_export_start
        from annotation.flows.eccv.services.proposals import (
            eccv_check_config,
            eccv_propose_start,
            eccv_run_create,
        )
        from annotation.flows.eccv.tasktypes import EccvJudgmentTask
        from annotation.flows.eccv.vocabulary import EccvStage
        from annotation.models import RunKind, RunStatus
        from annotation.services.job_recovery import JobSteps, job_steps_register

        job_steps_register(
            JobSteps(
                name="eccv.propose",
                start="eccv.propose_prepare",
                part="eccv.propose_part",
                finish="eccv.propose_finish",
                busy_status=RunStatus.PREPARING,
            )
        )
        job_steps_register(JobSteps(name="eccv.export", start="eccv.export"))

        from annotation.flows.eccv.settings import SETTINGS
        from annotation.flows.eccv.vocabulary import STATUS_WORDS, EccvItemKind

        flow_register(
            Flow(
                name="eccv",
                run_kind=RunKind.ECCV,
                stages=EccvStage.choices,
                item_kinds=EccvItemKind.choices,
                status_words=STATUS_WORDS,
                task_types=(EccvJudgmentTask(),),
                answerers={EccvStage.JUDGMENT: simulate.judgment_answer},
                demo_arguments=lazy("annotation.flows.eccv.demo:add_arguments"),
                demo=lazy("annotation.flows.eccv.demo:run_demo"),
                datasheet_quality=lazy("annotation.flows.eccv.quality:eccv_datasheet_quality"),
                quality_sweep=lazy("annotation.flows.eccv.demo:eccv_quality_sweep"),
                api_urls="annotation.flows.eccv.urls",
                check_config=eccv_check_config,
                settings=SETTINGS,
                create_run=eccv_run_create,
                start_export=eccv_export_start,
                funnel=eccv_funnel,
                run_inputs=inputs.INPUTS,
                run_jobs={
                    "propose": (
                        "Propose candidates with the registered models",
                        lambda run: eccv_propose_start(run=run),
                    )
                },
                answer_shares=lambda run: eccv_answer_shares(run=run),
                worker_gold=eccv_worker_gold,
            )
        )
