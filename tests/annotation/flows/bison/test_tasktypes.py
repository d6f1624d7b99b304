"""BISON's task pages word their instructions as the paper did (supplement A.2); the expected
time per item is the paper's (Table 5), and a batch's default reward pays the installation's
minimum at that time, stage 3's traps included (issue 48: at the assumed 20 s / 10 s the
defaults paid $11.68/h and $11.81/h)."""

from decimal import Decimal

import pytest

from annotation.flows.bison.lookup import TRAP_KIND
from annotation.flows.bison.tasktypes import SIDE_WORDS, SelectionTask, VerificationTask
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Question
from annotation.selectors.money.pay import pay_estimate
from annotation.selectors.work.run_texts import instructions_default
from annotation.services.runs.batches import batch_create
from tests.annotation.flows.bison.test_linking_attacks import sample_after_stage2

pytestmark = pytest.mark.django_db

# BISON supplement A.2, "Stage 3 Instructions", items 2, 3 (heading), 4 and 5 word for word.
PAPER_STAGE3 = (
    "Image dimensions. Variations in object size due to differences in image dimensions "
    "should be considered as irrelevant.",
    "Most suitable image for a query.",
    "What if there are more than one image that are suitable for the provided text query? "
    'Please select the option "More than one image are suitable for the caption".',
    "What if none of images is suitable for the provided text query? Please select the "
    'option "None of above images is suitable for the caption".',
)


def test_stage3_instructions_and_options_are_the_papers_words(paired_run):
    text = " ".join(instructions_default(paired_run, BisonStage.VERIFICATION).split())
    for sentence in PAPER_STAGE3:
        assert sentence in text, sentence
    # The paper's item 3 body (copied from stage 2) calls the left image the positive; in
    # stage 3 the sides are random and the worker is not told which is positive.
    assert "positive" not in text.lower() and "left" not in text.lower()
    assert SIDE_WORDS["both"] == "More than one image are suitable for the caption"
    assert SIDE_WORDS["neither"] == "None of above images is suitable for the caption"


# COCO-BISON, Table 5: average time per annotation (in sec.), stage 2 and stage 3.
TABLE_5 = {BisonStage.SELECTION: 25.9, BisonStage.VERIFICATION: 12.7}


def test_the_expected_times_are_table_5s():
    assert SelectionTask.expected_seconds == TABLE_5[BisonStage.SELECTION]
    assert VerificationTask.expected_seconds == TABLE_5[BisonStage.VERIFICATION]
    for task in (SelectionTask, VerificationTask):
        assert "Table 5" in task.seconds_source


def _hourly_at_table_5(batch, questions_per_hit: int) -> Decimal:
    return batch.reward * 3600 / Decimal(str(TABLE_5[batch.stage] * questions_per_hit))


def test_default_rewards_pay_the_minimum_at_the_papers_times(tmp_path, run_on_commit, settings):
    settings.CROWDVL_MIN_HOURLY_PAY = 15
    run, _ = sample_after_stage2(tmp_path, run_on_commit, seed=3, accuracy=0.9)
    selection = run.batches.get(stage=BisonStage.SELECTION)
    # 10 pairs x 25.9 s = 259 s at $15/h = $1.0792, rounded up.
    assert selection.reward == Decimal("1.08")
    assert _hourly_at_table_5(selection, 10) >= 15
    verification = batch_create(run=run, stage=BisonStage.VERIFICATION, provider="local", seed=3)
    first = Question.objects.filter(hit__batch=verification, hit__position=0)
    traps = first.filter(item__kind=TRAP_KIND).count()
    assert traps == 2 and first.count() == 12  # 10 triples and 2 traps, all paid
    # 12 questions x 12.7 s = 152.4 s at $15/h = $0.635, rounded up.
    assert verification.reward == Decimal("0.64")
    assert _hourly_at_table_5(verification, 12) >= 15
    for batch in (selection, verification):
        estimate = pay_estimate(batch=batch)
        assert estimate.seconds_per_item == TABLE_5[batch.stage]
        assert not estimate.below_minimum
