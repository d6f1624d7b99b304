from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.apps import AppConfig

from annotation.flows.eccv.vocabulary import EccvStage

if TYPE_CHECKING:
    import argparse

    from annotation.flow_registry import DemoContext
    from annotation.models import Job, Run
    from annotation.selectors.release.simulated_quality import QualityRow
    from pipeline.simulate import Population


class EccvConfig(AppConfig):
    """ECCV Caption: machine-proposed candidates judged by workers, with gold items."""

    name = "annotation.flows.eccv"
    label = "eccv"
    verbose_name = "ECCV Caption"

    def ready(self) -> None:
        # Only light modules here: selectors and services (numpy, pyarrow) are reached through
        # the functions below this class, which import them when first called, so no command
        # or web process pays for them at start-up (issue 46).
        from annotation.flow_registry import Flow, flow_register
        from annotation.flows.eccv import inputs, simulate
        from annotation.flows.eccv.tasktypes import EccvJudgmentTask
        from annotation.models import RunKind, RunStatus
        from annotation.services.jobs.job_steps import JobSteps, job_steps_register
        from annotation.services.release.export_specs import export_spec_register

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
                demo_arguments=_demo_arguments,
                demo=_demo,
                datasheet_quality=_datasheet_quality,
                quality_sweep=_quality_sweep,
                api_urls="annotation.flows.eccv.urls",
                settings=SETTINGS,
                settings_type=EccvSettings,
                create_run=_run_create,
                start_export=_export_start,
                funnel=_funnel,
                run_inputs=inputs.INPUTS,
                run_jobs={
                    "propose": ("Propose candidates with the registered models", _propose_start)
                },
                answer_shares=_answer_shares,
                worker_gold=_worker_gold,
            )
        )


# The flow's steps in heavy modules (numpy, pyarrow), each imported when first called.


def _run_create(**options: Any) -> Run:
    from annotation.flows.eccv.services.runs import eccv_run_create

    return eccv_run_create(**options)


def _propose_start(run: Run) -> Job:
    from annotation.flows.eccv.services.proposal_job import eccv_propose_start

    return eccv_propose_start(run=run)


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    from annotation.flows.eccv.demo import add_arguments

    add_arguments(parser)


def _demo(ctx: DemoContext) -> None:
    from annotation.flows.eccv.demo import run_demo

    run_demo(ctx)


def _quality_sweep(ctx: DemoContext, population: Population) -> list[QualityRow]:
    from annotation.flows.eccv.demo import eccv_quality_sweep

    return eccv_quality_sweep(ctx, population)


def _datasheet_quality(run: Run) -> list[QualityRow]:
    from annotation.flows.eccv.quality import eccv_datasheet_quality

    return eccv_datasheet_quality(run)


def _export_start(
    *, run: Run, allow_open_reviews: bool = False, release: dict[str, Any] | None = None
) -> Job:
    from annotation.flows.eccv.services.export import eccv_export_start

    return eccv_export_start(run=run, allow_open_reviews=allow_open_reviews, release=release)


def _funnel(run: Run) -> list[tuple[str, int | None]]:
    from annotation.flows.eccv.selectors import eccv_funnel

    return eccv_funnel(run)


def _answer_shares(run: Run) -> dict[str, dict[str, dict[str, float]]]:
    from annotation.flows.eccv.selectors import eccv_answer_shares

    return eccv_answer_shares(run=run)


def _worker_gold(run: Run) -> dict[int, tuple[int, int]]:
    from annotation.flows.eccv.selectors import eccv_worker_gold

    return eccv_worker_gold(run)
