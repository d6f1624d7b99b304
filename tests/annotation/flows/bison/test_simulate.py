"""How simulated BISON workers answer (`annotation/flows/bison/simulate.py`): from the run's
world, where careful verifiers take a confusable invalid caption for valid, together."""

from random import Random

from annotation.flows.bison.simulate import verification_answer
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Question
from annotation.services.runs.batches import batch_create, batch_publish
from pipeline.simulate import WorkerProfile
from pipeline.world import World
from tests.factories import selection_done_factory


def _answers(questions, world):
    careful, rng = WorkerProfile(accuracy=1.0), Random(0)
    choices = ["left", "right", "both", "neither"]
    return [verification_answer(q, choices, careful, rng, world) for q in questions]


def test_careful_verifiers_point_at_the_positive_for_a_confusable_caption(paired_run):
    selection_done_factory(paired_run)
    batch = batch_publish(
        batch=batch_create(run=paired_run, stage=BisonStage.VERIFICATION, provider="local")
    )
    questions = list(
        Question.objects.filter(hit__batch=batch, item__kind="triple").select_related(
            "item__positive", "item__negative", "item__caption"
        )
    )
    assert questions
    # A world where half the pairs have no valid caption: some triples are invalid there.
    plain = World(seed=11, discriminable=0.5, caption_valid=0.2)
    confusing = World(seed=11, discriminable=0.5, caption_valid=0.2, bison_confusable=1.0)
    sides = ["right" if q.swapped else "left" for q in questions]
    plain_answers = _answers(questions, plain)
    assert "both" in plain_answers
    assert all(a in ("both", side) for a, side in zip(plain_answers, sides, strict=True))
    assert _answers(questions, confusing) == sides
