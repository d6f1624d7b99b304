from django.apps import AppConfig


class CxcConfig(AppConfig):
    """Crisscrossed Captions: graded 0-5 similarity ratings for image-image, caption-caption
    and image-caption pairs chosen by indirect sampling."""

    name = "annotation.flows.cxc"
    label = "cxc"
    verbose_name = "Crisscrossed Captions"

    def ready(self) -> None:
        from annotation.flow_registry import Flow, flow_register, lazy
        from annotation.flows.cxc import inputs, simulate
        from annotation.flows.cxc.config import cxc_check_config
        from annotation.flows.cxc.services.export import CXC_EXPORT, cxc_export_start
        from annotation.flows.cxc.services.sampling import cxc_run_create
        from annotation.flows.cxc.tasktypes import CxcSisTask, CxcSitsTask, CxcStsTask
        from annotation.flows.cxc.vocabulary import CxcStage
        from annotation.models import RunKind, RunStatus
        from annotation.selectors.gold import worker_gold_tally
        from annotation.services.export_jobs import export_spec_register
        from annotation.services.job_recovery import JobSteps, job_steps_register

        job_steps_register(
            JobSteps(name="cxc.sample", start="cxc.sample", busy_status=RunStatus.PREPARING)
        )
        export_spec_register(CXC_EXPORT)

        from annotation.flows.cxc.settings import SETTINGS
        from annotation.flows.cxc.vocabulary import PAPER, STATUS_WORDS, SUMMARY, CxcItemKind

        flow_register(
            Flow(
                name="cxc",
                run_kind=RunKind.CXC,
                stages=tuple(CxcStage.choices),
                item_kinds=tuple(CxcItemKind.choices),
                status_words=STATUS_WORDS,
                summary=SUMMARY,
                paper=PAPER,
                task_types=(CxcSisTask(), CxcStsTask(), CxcSitsTask()),
                answerers={
                    CxcStage.SIS: simulate.rating_answer,
                    CxcStage.STS: simulate.rating_answer,
                    CxcStage.SITS: simulate.rating_answer,
                },
                demo_arguments=lazy("annotation.flows.cxc.demo:add_arguments"),
                demo=lazy("annotation.flows.cxc.demo:run_demo"),
                quality_sweep=lazy("annotation.flows.cxc.sweep:cxc_quality_sweep"),
                check_config=cxc_check_config,
                settings=SETTINGS,
                create_run=cxc_run_create,
                run_inputs=inputs.INPUTS,
                start_export=cxc_export_start,
                worker_gold=worker_gold_tally,
            )
        )
