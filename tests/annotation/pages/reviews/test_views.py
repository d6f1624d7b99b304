"""The review page judges every flow's work (issue 46): each question as the worker saw it
(every image of a pair, every caption), the answer in the words of the worker's page (never a
caption id or a stored label), gold's expected answer beside it, why the work was held in a
sentence (never a dict) and the worker's history in the run. One held review per task type of
the four flows (`tests/annotation/held_reviews.py` makes them)."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from annotation.flows.cxc.vocabulary import CxcStage
from annotation.flows.quality.vocabulary import QualityStage
from annotation.models import GOLD_KINDS, Answer, Review
from annotation.services.work.reviews import review_decide
from tests.annotation.held_reviews import (
    bison_selection_held,
    bison_verification_held,
    calibrated_then_missed,
    cxc_held,
    eccv_held,
    first_caption,
    quality_run_for,
    second_caption,
)

pytestmark = pytest.mark.django_db


def page_of(admin_client, review: Review) -> str:
    response = admin_client.get(f"/review/{review.pk}/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "{'" not in page and "{&#x27;" not in page  # no Python dict anywhere
    return page


def row(page: str, number: int) -> str:
    found = re.search(rf'<tr[^>]*id="question-{number}">(.*?)</tr>', page, re.S)
    assert found, f"no row for question {number}"
    return found.group(1)


def cell(row_html: str, name: str) -> str:
    found = re.search(rf'<td class="{name}">(.*?)</td>', row_html, re.S)
    assert found, name
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1))).strip()


def images_of(row_html: str) -> list[str]:
    return re.findall(r'<img src="([^"]+)"', row_html)


def staff(image) -> str:  # type: ignore[no-untyped-def]
    return reverse("staff-image", args=[image.pk])


def answers(review: Review) -> list[Answer]:
    return list(
        review.assignment.answers.select_related(
            "question__item__positive",
            "question__item__negative",
            "question__item__caption",
            "question__item__caption2",
            "question__item__candidate",
            "question__item__candidate2",
            "caption",
        ).order_by("question__position")
    )


def gold_answer(review: Review) -> Answer:
    return next(a for a in answers(review) if a.question.item.kind in GOLD_KINDS)


# --- BISON: no gold, held by the run's speed rule ---------------------------------------------


def test_bison_selection_shows_both_images_the_captions_and_the_chosen_caption(
    paired_run, admin_client
):
    review = bison_selection_held(paired_run)
    page = page_of(admin_client, review)
    assert "faster than the run&#x27;s rule: work under 5 s per item is held" in page
    assert "BISON stage 2: caption selection" in page and "(bison_selection)" not in page
    for answer in answers(review):
        item, shown = answer.question.item, row(page, answer.question.position + 1)
        assert images_of(shown) == [staff(item.positive), staff(item.negative)]
        captions = sorted(item.positive.captions.all(), key=lambda c: c.coco_id)
        for caption in captions:
            assert caption.text in shown
        if answer.caption is None:
            assert cell(shown, "answer") == "None of the above captions are suitable"
        else:
            n = captions.index(answer.caption) + 1
            assert cell(shown, "answer") == f"Caption {n}: “{answer.caption.text}”"
            assert answer.label not in cell(shown, "answer")  # never the COCO caption id


def test_bison_verification_shows_the_pair_as_the_worker_saw_it_and_the_side_chosen(
    paired_run, admin_client
):
    review = bison_verification_held(paired_run)
    page = page_of(admin_client, review)
    assert "BISON stage 3: verification" in page and "faster than the run" in page
    words = {
        "left": "The left image",
        "right": "The right image",
        "both": "More than one image are suitable for the caption",
        "neither": "None of above images is suitable for the caption",
    }
    for answer in answers(review):
        question = answer.question
        item, shown = question.item, row(page, question.position + 1)
        left, right = (
            (item.negative, item.positive) if question.swapped else (item.positive, item.negative)
        )
        assert images_of(shown) == [staff(left), staff(right)]  # the sides the worker saw
        assert item.caption.text in shown
        said = cell(shown, "answer")
        assert said.startswith(words[answer.choice]), said
        if answer.label in ("positive", "negative"):
            assert said.endswith(f"(the {answer.label})")


# --- ECCV Caption: paper gold -----------------------------------------------------------------


def test_eccv_judgment_shows_the_pair_the_answer_its_rationale_and_gold_expected(
    proposed, admin_client
):
    review = eccv_held(proposed)
    page = page_of(admin_client, review)
    for answer in answers(review):
        item, shown = answer.question.item, row(page, answer.question.position + 1)
        assert images_of(shown) == [staff(item.positive)]
        assert item.caption.text in shown
        assert cell(shown, "answer") == (
            "Mostly NO, because: The caption describes the main concepts of the image wrongly "
            "(wrong: color)"
        )
    gold = gold_answer(review)
    failed = next(a for a in answers(review) if a.question.item.kind == "gold_positive")
    shown = row(page, failed.question.position + 1)
    assert "FAILED" in cell(shown, "gold-cell")
    assert "expects “Partially YES, but” or “100% YES”" in cell(shown, "gold-cell")
    assert gold.question.item.kind in GOLD_KINDS
    n = failed.question.position + 1
    assert (
        f"Question {n} failed gold — the answer is yes (the caption fits): answered "
        "“Mostly NO, because”; gold expects “Partially YES, but” or “100% YES”."
    ) in page
    # The other gold, a negative, passed.
    passed = next(a for a in answers(review) if a.question.item.kind == "gold_negative")
    assert "passed ✓" in cell(row(page, passed.question.position + 1), "gold-cell")


def test_the_workers_history_in_the_run_is_on_the_page(proposed, admin_client):
    review = eccv_held(proposed)
    earlier = Review.objects.filter(assignment__worker=review.assignment.worker).exclude(
        pk=review.pk
    )
    assert earlier.exists()
    review_decide(review=earlier.first(), approve=True)  # its gold now counts
    page = page_of(admin_client, review)
    history = re.search(r'<section id="worker-history".*?</section>', page, re.S).group(0)
    worker = review.assignment.worker
    assert f"{worker.external_id} in this run" in history
    others = earlier.count()
    assert f"Other assignments: 1 approved, {others - 1} submitted." in history
    assert f"Their other reviews: 1 approved, {others - 1} open." in history
    assert "Gold so far (counted work): 1 of 2 right (50%)" in history
    assert f'href="/review/{earlier.first().pk}/"' in history
    assert f'href="/runs/{proposed.pk}/workers/#worker-{worker.pk}"' in history


# --- CxC: gold copies of pairs the raters agreed on -------------------------------------------


@pytest.mark.parametrize("stage", [CxcStage.SIS, CxcStage.STS, CxcStage.SITS])
def test_cxc_shows_both_sides_of_the_pair_and_the_rating_in_the_scales_words(
    dataset, admin_client, stage
):
    review = cxc_held(dataset, stage)
    page = page_of(admin_client, review)
    for answer in answers(review):
        item, shown = answer.question.item, row(page, answer.question.position + 1)
        if stage == CxcStage.SIS:
            assert images_of(shown) == [staff(item.positive), staff(item.negative)]
        elif stage == CxcStage.STS:
            assert images_of(shown) == []
            assert item.caption.text in shown and item.caption2.text in shown
        else:
            assert images_of(shown) == [staff(item.positive)] and item.caption.text in shown
        assert cell(shown, "answer") == "0: Completely dissimilar: different topics"
    gold = gold_answer(review)
    shown = row(page, gold.question.position + 1)
    assert "FAILED" in cell(shown, "gold-cell") and "expects “4.00 ± 1”" in cell(shown, "gold-cell")
    assert (
        f"Question {gold.question.position + 1} failed gold — an item with a known rating: "
        "answered “0: Completely dissimilar: different topics”; gold expects “4.00 ± 1”."
    ) in page


# --- Caption quality: rating, yes/no, preference ----------------------------------------------


@pytest.fixture
def quality_run(dataset, tmp_path):
    return quality_run_for(dataset, tmp_path)


def test_quality_rating_shows_the_caption_and_the_rating_in_the_scales_words(
    quality_run, admin_client
):
    review = calibrated_then_missed(
        quality_run, QualityStage.RATING, agreed=lambda q: "4", missed=lambda q: "1"
    )
    page = page_of(admin_client, review)
    for answer in answers(review):
        item, shown = answer.question.item, row(page, answer.question.position + 1)
        assert images_of(shown) == [staff(item.positive)] and item.candidate.text in shown
        assert cell(shown, "answer") == "1: Is unrelated to the image"
    gold = gold_answer(review)
    assert "expects “4.00 ± 1”" in cell(row(page, gold.question.position + 1), "gold-cell")
    assert "answered “1: Is unrelated to the image”; gold expects “4.00 ± 1”." in page


def test_quality_binary_shows_the_answer_and_gold_in_the_pages_words(quality_run, admin_client):
    review = calibrated_then_missed(
        quality_run, QualityStage.BINARY, agreed=lambda q: "yes", missed=lambda q: "no"
    )
    page = page_of(admin_client, review)
    for answer in answers(review):
        item, shown = answer.question.item, row(page, answer.question.position + 1)
        assert images_of(shown) == [staff(item.positive)] and item.candidate.text in shown
        assert cell(shown, "answer") == "No, it does not"
    gold = gold_answer(review)
    shown = row(page, gold.question.position + 1)
    assert "FAILED" in cell(shown, "gold-cell")
    assert "expects “Yes, the caption describes the image”" in cell(shown, "gold-cell")
    assert (
        "answered “No, it does not”; gold expects “Yes, the caption describes the image”." in page
    )


def test_quality_preference_shows_both_captions_on_their_sides_and_the_side_chosen(
    quality_run, admin_client
):
    review = calibrated_then_missed(
        quality_run, QualityStage.PREFERENCE, agreed=first_caption, missed=second_caption
    )
    page = page_of(admin_client, review)
    for answer in answers(review):
        question = answer.question
        item, shown = question.item, row(page, question.position + 1)
        assert images_of(shown) == [staff(item.positive)]
        a, b = (
            (item.candidate2, item.candidate)
            if question.swapped
            else (item.candidate, item.candidate2)
        )
        assert f"Caption A: “{a.text}”" in html.unescape(re.sub(r"<[^>]+>", "", shown))
        assert f"Caption B: “{b.text}”" in html.unescape(re.sub(r"<[^>]+>", "", shown))
        side = "A" if question.swapped else "B"  # the worker picked the item's second caption
        assert cell(shown, "answer") == f"Caption {side} (the item's second)"
    gold = gold_answer(review)
    side = "B" if gold.question.swapped else "A"
    assert f"expects “Caption {side} (the item&#x27;s first)”" in row(
        page, gold.question.position + 1
    ).replace("’", "'")
