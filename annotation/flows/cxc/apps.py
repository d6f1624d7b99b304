from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.apps import AppConfig

if TYPE_CHECKING:
    import argparse

    from annotation.flow_registry import DemoContext
    from annotation.models import Job, Run
    from annotation.selectors.release.simulated_quality import QualityRow
    from pipeline.simulate import Population


class CxcConfig(AppConfig):
    """Crisscrossed Captions: graded 0-5 similarity ratings for image-image, caption-caption
    and image-caption pairs chosen by indirect sampling."""

    name = "annotation.flows.cxc"
    label = "cxc"
    verbose_name = "Crisscrossed Captions"

    def ready(self) -> None:
        # Only light modules here: services (numpy, pyarrow) are reached through the functions
        # below this class, which import them when first called, so no command or web process
        # pays for them at start-up (issue 46).
        from annotation.flow_registry import Flow, flow_register
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
                demo_arguments=_demo_arguments,
                demo=_demo,
                quality_sweep=_quality_sweep,
                settings=SETTINGS,
                settings_type=CxcSettings,
                create_run=_run_create,
                run_inputs=inputs.INPUTS,
                start_export=_export_start,
                worker_gold=worker_gold_tally,
            )
        )


# The flow's steps in heavy modules (numpy, pyarrow), each imported when first called.


def _run_create(**options: Any) -> Run:
    from annotation.flows.cxc.services.sampling import cxc_run_create

    return cxc_run_create(**options)


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    from annotation.flows.cxc.demo import add_arguments

    add_arguments(parser)


def _demo(ctx: DemoContext) -> None:
    from annotation.flows.cxc.demo import run_demo

    run_demo(ctx)


def _quality_sweep(ctx: DemoContext, population: Population) -> list[QualityRow]:
    from annotation.flows.cxc.sweep import cxc_quality_sweep

    return cxc_quality_sweep(ctx, population)


def _export_start(*, run: Run, release: dict[str, Any] | None = None) -> Job:
    from annotation.flows.cxc.services.export import cxc_export_start

    return cxc_export_start(run=run, release=release)
