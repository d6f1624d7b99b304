"""Adaptive redundancy in the app: follow-up batches ask again only where the posterior is
uncertain, carry gold items like any batch, and stop at the cap."""

from collections import Counter

import pytest

from annotation.flows.eccv.selectors import (
    eccv_follow_up_items,
    eccv_policy,
    eccv_positive_item_ids,
    eccv_votes,
)
from annotation.flows.eccv.vocabulary import EccvItemKind, EccvStage
from annotation.models import Answer, Question
from pipeline.errors import InputError
from pipeline.redundancy import needs_more
from tests.annotation.flows.simulated_batch import answered_batch

pytestmark = pytest.mark.django_db


def judge(run, *, more: bool, seed: int):
    return answered_batch(
        run,
        EccvStage.JUDGMENT,
        items_per_hit=6,
        workers=12,
        population="mixed",
        seed=seed,
        more=more,
        id_prefix=f"sim-{seed}",
    )


def test_follow_up_batches_ask_only_where_uncertain_up_to_the_cap(proposed):
    run = proposed
    run.config = {
        **run.config,
        "aggregation": "posterior",
        "adaptive": {"start": 1, "cap": 3, "confidence": 0.98},
    }
    run.save(update_fields=["config"])
    first = judge(run, more=False, seed=1)
    candidates = Question.objects.filter(hit__batch=first, item__kind=EccvItemKind.CANDIDATE)
    assert candidates.count() > 0
    policy = eccv_policy(run)
    wanted = eccv_follow_up_items(run=run)
    votes = eccv_votes(run=run)
    # One vote never reaches 98 %: every judged pair is asked again.
    assert set(wanted) == set(votes) and all(len(v) == 1 for v in votes.values())

    rounds = 1
    while True:
        try:
            batch = judge(run, more=True, seed=1 + rounds)
        except InputError as exc:  # nothing uncertain is left
            assert exc.field == "more_judgments"
            break
        rounds += 1
        questions = Question.objects.filter(hit__batch=batch)
        asked = set(
            questions.filter(item__kind=EccvItemKind.CANDIDATE).values_list("item", flat=True)
        )
        assert asked == set(wanted)  # exactly the uncertain ones
        kinds = Counter(questions.values_list("item__kind", flat=True))
        assert kinds["gold_positive"] > 0 and kinds["gold_negative"] > 0  # gold like any HIT
        wanted = eccv_follow_up_items(run=run)
        assert rounds <= 3
    votes = eccv_votes(run=run)
    assert max(len(v) for v in votes.values()) <= 3
    assert any(len(v) == 2 for v in votes.values())  # agreement settled some at two
    assert not any(needs_more(v, policy) for v in votes.values())
    judged = Counter(
        Answer.objects.filter(
            question__item__kind=EccvItemKind.CANDIDATE, question__item__run=run
        ).values_list("question__item", flat=True)
    )
    assert sum(judged.values()) < 3 * len(judged)  # less than fixed triple redundancy
    assert eccv_positive_item_ids(run=run) <= set(votes)


def test_without_uncertain_pairs_a_follow_up_batch_is_refused(proposed):
    judge(proposed, more=False, seed=1)
    proposed.config = {**proposed.config, "adaptive": {"cap": 1}}
    proposed.save(update_fields=["config"])
    with pytest.raises(InputError, match="no judged pair is still uncertain") as caught:
        judge(proposed, more=True, seed=2)
    assert caught.value.field == "more_judgments"  # next to the option on the batch form


def test_bad_redundancy_settings_are_refused(dataset):
    from annotation.flows.eccv.services.runs import eccv_run_create

    base = {"image_queries": 2, "caption_queries": 2, "k": 2, "models": 1}
    with pytest.raises(InputError, match="unknown redundancy setting 'budget'"):
        eccv_run_create(dataset=dataset, config={**base, "adaptive": {"budget": 3}})
    with pytest.raises(InputError) as caught:
        eccv_run_create(dataset=dataset, config={**base, "adaptive": {"start": 4, "cap": 2}})
    assert caught.value.field == "adaptive.cap"  # named as the run setting (issue 47)
