from django.apps import AppConfig

from annotation.flows.eccv.vocabulary import EccvStage


class EccvConfig(AppConfig):
    """ECCV Caption: machine-proposed candidates judged by workers, with gold items."""

    name = "annotation.flows.eccv"
    label = "eccv"
    verbose_name = "ECCV Caption"

    def ready(self) -> None:
        # Only light modules here: selectors and services (numpy, pyarrow) are `lazy`, imported
        # when first called, so no command or web process pays for them at start-up (issue 46).
        from annotation.flow_registry import Flow, flow_register, lazy
        from annotation.flows.eccv import inputs, simulate
        from annotation.flows.eccv.tasktypes import EccvJudgmentTask
        from annotation.models import RunKind, RunStatus
        from annotation.services.jobs.job_steps import JobSteps, job_steps_register
        from annotation.services.release.export_specs import export_spec_register

        selectors = "annotation.flows.eccv.selectors"
        runs = "annotation.flows.eccv.services.runs"
        propose_start = lazy("annotation.flows.eccv.services.proposal_job:eccv_propose_start")
        answer_shares = lazy(f"{selectors}:eccv_answer_shares")

        job_steps_register(
            JobSteps(
                name="eccv.propose",
                start="eccv.propose_prepare",
                part="eccv.propose_part",
                finish="eccv.propose_finish",
                busy_status=RunStatus.PREPARING,
            )
        )
        export_spec_register(
            job_name="eccv.export", spec="annotation.flows.eccv.services.export:ECCV_EXPORT"
        )

        from annotation.flows.eccv.settings import SETTINGS, EccvSettings
        from annotation.flows.eccv.vocabulary import PAPER, STATUS_WORDS, SUMMARY, EccvItemKind

        flow_register(
            Flow(
                name="eccv",
                run_kind=RunKind.ECCV,
                stages=tuple(EccvStage.choices),
                item_kinds=tuple(EccvItemKind.choices),
                status_words=STATUS_WORDS,
                summary=SUMMARY,
                paper=PAPER,
                task_types=(EccvJudgmentTask(),),
                answerers={EccvStage.JUDGMENT: simulate.judgment_answer},
                demo_arguments=lazy("annotation.flows.eccv.demo:add_arguments"),
                demo=lazy("annotation.flows.eccv.demo:run_demo"),
                datasheet_quality=lazy("annotation.flows.eccv.quality:eccv_datasheet_quality"),
                quality_sweep=lazy("annotation.flows.eccv.demo:eccv_quality_sweep"),
                api_urls="annotation.flows.eccv.urls",
                settings=SETTINGS,
                settings_type=EccvSettings,
                create_run=lazy(f"{runs}:eccv_run_create"),
                start_export=lazy("annotation.flows.eccv.services.export:eccv_export_start"),
                funnel=lazy(f"{selectors}:eccv_funnel"),
                run_inputs=inputs.INPUTS,
                run_jobs={
                    "propose": (
                        "Propose candidates with the registered models",
                        lambda run: propose_start(run=run),
                    )
                },
                answer_shares=lambda run: answer_shares(run=run),
                worker_gold=lazy(f"{selectors}:eccv_worker_gold"),
            )
        )
