from django.apps import AppConfig


class CxcConfig(AppConfig):
    """Crisscrossed Captions: graded 0-5 similarity ratings for image-image, caption-caption
    and image-caption pairs chosen by indirect sampling."""

    name = "annotation.flows.cxc"
    label = "cxc"
    verbose_name = "Crisscrossed Captions"

    def ready(self) -> None:
        # Only light modules here: services (numpy, pyarrow) are `lazy`, imported when first
        # called, so no command or web process pays for them at start-up (issue 46).
        from annotation.flow_registry import Flow, flow_register, lazy
        from annotation.flows.cxc import inputs, simulate
        from annotation.flows.cxc.tasktypes import CxcSisTask, CxcSitsTask, CxcStsTask
        from annotation.flows.cxc.vocabulary import CxcStage
        from annotation.models import RunKind, RunStatus
        from annotation.selectors.reviews.gold import worker_gold_tally
        from annotation.services.jobs.job_steps import JobSteps, job_steps_register
        from annotation.services.release.export_specs import export_spec_register

        job_steps_register(
            JobSteps(name="cxc.sample", start="cxc.sample", busy_status=RunStatus.PREPARING)
        )
        export_spec_register(
            job_name="cxc.export", spec="annotation.flows.cxc.services.export:CXC_EXPORT"
        )

        from annotation.flows.cxc.settings import SETTINGS, CxcSettings
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
                settings=SETTINGS,
                settings_type=CxcSettings,
                create_run=lazy("annotation.flows.cxc.services.sampling:cxc_run_create"),
                run_inputs=inputs.INPUTS,
                start_export=lazy("annotation.flows.cxc.services.export:cxc_export_start"),
                worker_gold=worker_gold_tally,
            )
        )
