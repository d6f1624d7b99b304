"""Every kind of hold reason reads as one sentence (issue 46), from one function that the
review page and the review queue share; the queue names each batch's stage by its label."""

from __future__ import annotations

import pytest
from django.utils.html import escape

from annotation.flows.bison.vocabulary import BisonStage
from annotation.flows.cxc.vocabulary import CxcStage
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.selectors.reviews.review_page import review_reasons_in_words
from annotation.selectors.reviews.review_reasons import reason_sentence
from annotation.tasktypes import task_type_for
from tests.annotation.held_reviews import bison_selection_held, eccv_held

FAST = {"policy": "fast_work", "seconds": 6.0, "items": 3, "seconds_per_item": 2.0, "limit": 5.0}
REJECTED = {
    "policy": "rejected_selections",
    "judged": 12,
    "rejected": 6,
    "rejected_share": 0.5,
    "limit": 0.3,
}
DISAGREES = {
    "policy": "disagrees_with_crowd",
    "agreed": 4,
    "compared": 20,
    "upper95": 0.4167,
    "limit": 0.7,
    "gold_right": 3,
    "gold_seen": 3,
}

FAILS_GOLD = {
    "policy": "fails_gold",
    "gold_right": 25,
    "gold_seen": 40,
    "upper95": 0.7389,
    "limit": 0.8,
}


def test_each_policy_reads_as_a_sentence_with_its_rule():
    selection = task_type_for(BisonStage.SELECTION)
    assert reason_sentence(FAST, task=selection) == (
        "2 s per item (3 items in 6 s), faster than the run's rule: work under 5 s per item "
        "is held (hold_fast_seconds_per_item)."
    )
    assert reason_sentence(REJECTED, task=selection) == (
        "Stage 3 rejected 6 of this worker's 12 judged selections (50%), over the batch's "
        "limit of 30% (hold_rejected_share)."
    )
    assert reason_sentence(DISAGREES, task=task_type_for(EccvStage.JUDGMENT)) == (
        "Agreed with the other workers on 4 of 20 compared answers: at best 42% (95% upper "
        "bound), under the rule's 70%, while passing gold (3 of 3 right)."
    )
    assert reason_sentence(FAILS_GOLD, task=task_type_for(CxcStage.STS)) == (
        "Passed 25 of 40 gold questions of this stage: at best 74% (95% upper bound), under "
        "the rule's 80%; all of the worker's waiting work is held."
    )
    # A policy no code words any more still reads as words, never as a dict.
    odd = reason_sentence({"policy": "old_rule", "share": 0.5}, task=None)
    assert odd == "Held by the old rule policy: share 0.5."


def test_a_gold_failure_reads_in_the_answers_words():
    eccv = task_type_for(EccvStage.JUDGMENT)
    reason = {
        "position": 4,
        "gold": "gold_negative",
        "expected": ["mostly_no", "no"],
        "answer": "yes",
    }
    assert reason_sentence(reason, task=eccv) == (
        "Question 5 failed gold — the answer is no (the caption does not fit): answered "
        "“100% YES”; gold expects “Mostly NO, because” or “100% NO”."
    )
    rating = {"position": 0, "gold": "gold_rating", "expected": ["2.40 ± 1"], "answer": "5"}
    assert reason_sentence(rating, task=task_type_for(CxcStage.STS)) == (
        "Question 1 failed gold — an item with a known rating: answered “5: Same meaning: they "
        "show or say the same thing (the same scene)”; gold expects “2.40 ± 1”."
    )


@pytest.mark.django_db
def test_the_queue_shows_the_reasons_sentences_and_the_stages_labels(
    paired_run, proposed, admin_client
):
    held = [bison_selection_held(paired_run), eccv_held(proposed)]
    page = admin_client.get("/review/").content.decode()
    assert "{'" not in page and "{&#x27;" not in page
    assert "BISON stage 2: caption selection" in page and "(bison_selection)" not in page
    assert "ECCV Caption: image-caption judgments" in page and "(eccv_judgment)" not in page
    assert "faster than the run&#x27;s rule: work under 5 s per item is held" in page
    assert (
        "failed gold — the answer is yes (the caption fits): answered “Mostly NO, because”" in page
    )
    # One wording: the queue and each review's page show the same sentences.
    for review in held:
        detail = admin_client.get(f"/review/{review.pk}/").content.decode()
        sentences = review_reasons_in_words(review=review)
        assert len(sentences) == len(review.reasons)
        for sentence in sentences:
            assert escape(sentence) in page and escape(sentence) in detail
