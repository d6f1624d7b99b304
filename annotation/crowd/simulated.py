"""Programmatic workers with a configurable accuracy and seed.

They claim HITs and submit through the same services as the web form. In stage 2 they see
each image only through its captions, a text stand-in for looking at it; in stage 3 a careful
verifier (probability `accuracy`) recognises the positive image, a careless one answers at
random.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.utils import timezone

from annotation.crowd.base import ServerSideProvider
from annotation.models import Assignment, Batch, Question, Stage
from pipeline.simulate import (
    WorkerProfile,
    answer_seconds,
    discriminative_choice,
    judgment_from_overlap,
    noisy,
)
from pipeline.text import tokenize


@dataclass
class SimulationReport:
    workers: int = 0
    assignments: int = 0
    answers: int = 0
    worker_ids: list[str] = field(default_factory=list)


def _tokens_of(image: Any) -> list[list[str]]:
    return [tokenize(c.text) for c in image.captions.all()]


class SimulatedProvider(ServerSideProvider):
    name = "simulated"

    def answer(self, *, question: Question, profile: WorkerProfile, rng: random.Random) -> str:
        from annotation.tasktypes import task_type_for

        task = task_type_for(question.hit.batch.stage)
        item = question.item
        choices = task.worker_choices(question=question)
        if question.hit.batch.stage == Stage.ECCV_JUDGMENT:
            return self._eccv_answer(question=question, profile=profile, rng=rng)
        if question.hit.batch.stage == Stage.BISON_SELECTION:
            captions = [
                (str(c.coco_id), tokenize(c.text))
                for c in sorted(item.positive.captions.all(), key=lambda c: c.coco_id)
            ]
            correct = discriminative_choice(captions, _tokens_of(item.negative))
        else:
            # A careful verifier sees which image the query describes: the positive's side.
            correct = "right" if question.swapped else "left"
        return noisy(correct, choices, accuracy=profile.accuracy, rng=rng)

    def _eccv_answer(
        self, *, question: Question, profile: WorkerProfile, rng: random.Random
    ) -> str:
        """Judge by the caption's word overlap with the image's own captions (the caption itself
        excluded); gold items are answered right with probability `gold_accuracy`."""
        import json

        from annotation.tasktypes.eccv import UNCERTAIN

        item = question.item
        assert item.caption is not None
        others = [c for c in item.positive.captions.all() if c.pk != item.caption_id]
        correct = judgment_from_overlap(
            tokenize(item.caption.text),
            [tokenize(c.text) for c in others],
            own=item.caption.image_id == item.positive_id,
        )
        gold = item.kind in ("gold_positive", "gold_negative")
        accuracy = profile.gold_accuracy if gold else profile.accuracy
        answer = noisy(
            correct, ("yes", "partially_yes", "mostly_no", "no"), accuracy=accuracy, rng=rng
        )
        if answer in UNCERTAIN and question.hit.batch.options.get("follow_ups", True):
            reasons = [
                rng.choice(["extra_concepts", "missing_concepts", "wrong_description", "grammar"])
            ]
            errors = (
                [rng.choice(["quantity", "color", "action", "location"])]
                if reasons == ["wrong_description"]
                else []
            )
            return json.dumps({"answer": answer, "reasons": reasons, "errors": errors})
        return answer

    def work(
        self,
        *,
        batch: Batch,
        workers: int,
        profile: WorkerProfile,
        seed: int = 0,
        id_prefix: str | None = None,
    ) -> SimulationReport:
        """Let `workers` simulated workers take turns claiming and answering HITs until none
        are left. Each worker keeps a simulated clock, so timings follow the profile."""
        from annotation.services.assignments import (
            assignment_claim_next,
            assignment_submit,
            worker_get_or_create,
        )

        rng = random.Random(f"{seed}:{batch.pk}")
        prefix = id_prefix or f"sim-r{batch.run_id}-{batch.stage}"
        report = SimulationReport()
        team = [
            worker_get_or_create(provider=self.name, external_id=f"{prefix}-{i:03d}")
            for i in range(workers)
        ]
        clocks = {w.pk: timezone.now() for w in team}
        active = list(team)
        while active:
            for worker in list(active):
                assignment = assignment_claim_next(
                    batch=batch, worker=worker, now=clocks[worker.pk]
                )
                if assignment is None:
                    active.remove(worker)
                    continue
                answers, seconds = self._answers(assignment, profile, rng)
                clocks[worker.pk] = assignment.accepted_at + timedelta(seconds=seconds)
                assignment_submit(
                    assignment_id=assignment.pk,
                    worker=worker,
                    answers=answers,
                    submitted_at=clocks[worker.pk],
                )
                report.assignments += 1
                report.answers += len(answers)
        report.workers = sum(1 for w in team if w.assignments.filter(hit__batch=batch).exists())
        report.worker_ids = [w.external_id for w in team]
        return report

    def _answers(
        self, assignment: Assignment, profile: WorkerProfile, rng: random.Random
    ) -> tuple[dict[str, str], float]:
        questions = assignment.hit.questions.select_related(
            "hit__batch", "item__caption", "item__positive", "item__negative"
        ).prefetch_related("item__positive__captions", "item__negative__captions")
        answers: dict[str, str] = {}
        seconds = 0.0
        for question in questions:
            answers[f"q{question.position}"] = self.answer(
                question=question, profile=profile, rng=rng
            )
            seconds += answer_seconds(profile, rng)
        return answers, seconds
