from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.apps import AppConfig

from annotation.flows.bison.vocabulary import BisonStage

if TYPE_CHECKING:
    import argparse

    from annotation.flow_registry import DemoContext
    from annotation.models import Job, Run
    from annotation.selectors.release.simulated_quality import QualityRow
    from pipeline.simulate import Population


class BisonConfig(AppConfig):
    """COCO-BISON: stage 1 pairing, stage 2 caption selection, stage 3 verification."""

    name = "annotation.flows.bison"
    label = "bison"
    verbose_name = "COCO-BISON"

    def ready(self) -> None:
        # Only light modules here: selectors and services (numpy, pyarrow) are reached through
        # the functions below this class, which import them when first called, so no command
        # or web process pays for them at start-up (issue 46).
        from annotation.flow_registry import Flow, flow_register
        from annotation.flows.bison import simulate
        from annotation.flows.bison.tasktypes import SelectionTask, VerificationTask
        from annotation.models import RunKind, RunStatus
        from annotation.services.jobs.job_steps import JobSteps, job_steps_register
        from annotation.services.release.export_specs import export_spec_register

        job_steps_register(
            JobSteps(
                name="bison.pairing",
                start="bison.pairing_prepare",
                part="bison.pairing_block",
                finish="bison.pairing_finish",
                part_args=_pairing_block_args,
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
                demo_arguments=_demo_arguments,
                demo=_demo,
                datasheet_quality=_datasheet_quality,
                quality_sweep=_quality_sweep,
                api_urls="annotation.flows.bison.urls",
                settings=SETTINGS,
                settings_type=BisonSettings,
                start_export=_export_start,
                funnel=_funnel,
                run_jobs={
                    "pairing": (
                        "Stage 1: pair images (FastText trained on the captions)",
                        _pairing_start,
                    )
                },
            )
        )


# The flow's steps in heavy modules (numpy, pyarrow), each imported when first called.


def _pairing_start(run: Run) -> Job:
    from annotation.flows.bison.services.pairing import pairing_start

    return pairing_start(run=run)


def _pairing_block_args(job: Job, part: int) -> list[int]:
    from annotation.flows.bison.services.pairing import pairing_block_args

    return pairing_block_args(job, part)


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    from annotation.flows.bison.demo import add_arguments

    add_arguments(parser)


def _demo(ctx: DemoContext) -> None:
    from annotation.flows.bison.demo import run_demo

    run_demo(ctx)


def _quality_sweep(ctx: DemoContext, population: Population) -> list[QualityRow]:
    from annotation.flows.bison.demo import bison_quality_sweep

    return bison_quality_sweep(ctx, population)


def _datasheet_quality(run: Run) -> list[QualityRow]:
    from annotation.flows.bison.quality import bison_datasheet_quality

    return bison_datasheet_quality(run)


def _export_start(*, run: Run, release: dict[str, Any] | None = None) -> Job:
    from annotation.flows.bison.services.export import bison_export_start

    return bison_export_start(run=run, release=release)


def _funnel(run: Run) -> list[tuple[str, int | None]]:
    from annotation.flows.bison.selectors import bison_funnel

    return bison_funnel(run)
