"""BISON stage 3 against a worker who looks the pictures up instead of judging them (issue 47).

Stage 3 asks which of two images a caption describes. Every query caption is a COCO caption
of the triple's positive image, so a worker holding the public COCO images and captions who
identifies both served pictures (a perceptual hash does, whatever the renderings) answers
"the positive" every time without looking: the *lookup answer*. It is right wherever the
caption discriminates and wrong exactly where careful people say otherwise ("both",
"neither", or the other image): on the triples stage 3 exists to reject.

So stage 3's checks are items the lookup answers wrong: *traps*, two per HIT on top of its
triples, shown like every other question, their answers from this run's people, never from a
file:

* *established* traps (from a stage's second batch on): copies of earlier stage-3 triples on
  which every verifier agreed on an answer other than the positive (`trap_kind`);
* *pair* traps (every batch, the first included): an image pair for which stage 2 found no
  caption of the left image that leaves the right one out ("none of the above"), asked with
  one of the left image's captions (`pair_traps`). A person's answer is likely "both"; the
  lookup's is the left image. One stage-2 worker's word is not enough to judge anyone by, so
  a pair trap counts against a worker only where the other stage-3 workers who answered it
  mostly did not give the lookup answer (`lookup_follows`).

A worker who answered at least `lookup_min_traps` counting traps and gave the lookup answer
on more than `lookup_share` of them is held for review before being paid
(`lookup_hold_reasons`), in every stage-3 batch of the run where their work is unpaid. Held
work does not count toward the verified set (`counted_reviewed`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import Count, Q

from annotation.flows.bison.vocabulary import NONE, VERIFICATION_LABELS, BisonItemKind, BisonStage
from annotation.models import Answer, Assignment, Batch, GoldItemKind, Item, Run
from annotation.selectors.counting import counted
from annotation.selectors.reviews.gold import Established
from annotation.services.checks import check_int, check_number
from annotation.services.runs.gold import GoldKind

# What a worker who looks the caption's COCO image up answers: its own image.
LOOKUP_LABEL = "positive"
TRAP_KIND = GoldItemKind.CHOICE
# A pair trap's tag: its answer is one stage-2 worker's word, not gold to pass or fail; only
# the lookup rule reads it, where the other verifiers who answered it agree.
PAIR_TRAP = "stage2_none"
FOLLOWS_LOOKUP = "follows_lookup"  # the policy a held review's reason names

# Batch options of stage 3: from how many counting traps, and above which share of lookup
# answers on them, a worker is held. A careful person gives the lookup answer on a trap when
# they disagree with the people who established it; a lookup worker always does. At the
# defaults (two of two, three of three or four, ...) a careful person who gives the lookup
# answer on a counting trap 10 % of the time is held with probability 1 % after two; on the
# simulated sample none of 116 careful verifiers was (tests/.../bison/test_lookup.py).
LOOKUP_POLICY: dict[str, Any] = {"lookup_min_traps": 2, "lookup_share": 0.75}


def lookup_policy(options: dict[str, Any]) -> dict[str, Any]:
    """A stage-3 batch's lookup policy options, checked (InputError names the option)."""
    policy = {**LOOKUP_POLICY, **{k: options[k] for k in LOOKUP_POLICY if k in options}}
    check_int(policy, "lookup_min_traps", low=1, high=10_000)
    check_number(policy, "lookup_share", low=0.0, high=1.0)
    return policy


def trap_kind(found: Established) -> GoldKind | None:
    """A trap copy of an established triple: only where the agreed answer is not the lookup
    answer (a copy of a triple everyone matched to its positive checks nothing the lookup
    gets wrong)."""
    if found.label not in VERIFICATION_LABELS or found.label == LOOKUP_LABEL:
        return None
    return GoldKind(kind=TRAP_KIND, target=float(VERIFICATION_LABELS.index(found.label)))


def trap_answer(target: float | None) -> str:
    """The established answer a trap expects."""
    index = int(target or 0)
    return VERIFICATION_LABELS[index] if 0 <= index < len(VERIFICATION_LABELS) else ""


def pair_traps(*, run: Run) -> list[Item]:
    """The run's pair traps, made once per image pair whose counted stage-2 answers all said
    "none of the above": the pair with one of its left image's captions (drawn by the pair's
    id), expecting "both"."""
    answers = Answer.objects.filter(
        counted("assignment__"),
        question__hit__batch__run=run,
        question__hit__batch__stage=BisonStage.SELECTION,
        question__item__kind=BisonItemKind.IMAGE_PAIR,
    )
    none_only = (
        answers.values("question__item_id")
        .annotate(n=Count("pk"), chosen=Count("pk", filter=~Q(label=NONE)))
        .filter(chosen=0)
        .values_list("question__item_id", flat=True)
    )
    # In pk order: the traps' own pks (and so how they are dealt) follow it on every database.
    pairs = (
        Item.objects.filter(pk__in=list(none_only))
        .order_by("pk")
        .prefetch_related("positive__captions")
    )
    made = []
    for pair in pairs:
        captions = sorted(pair.positive.captions.all(), key=lambda c: c.coco_id)
        if captions and pair.negative_id is not None:
            made.append(
                Item(
                    run=run,
                    kind=TRAP_KIND,
                    source_id=pair.pk,
                    positive_id=pair.positive_id,
                    negative_id=pair.negative_id,
                    caption_id=captions[pair.pk % len(captions)].pk,
                    tag=PAIR_TRAP,
                    target=float(VERIFICATION_LABELS.index("both")),
                )
            )
    Item.objects.bulk_create(made, ignore_conflicts=True)  # made by an earlier batch
    return list(Item.objects.filter(run=run, kind=TRAP_KIND, tag=PAIR_TRAP).order_by("pk"))


def lookup_follows(*, run: Run, workers: set[int]) -> dict[int, tuple[int, int]]:
    """Per worker (Worker pk) of `workers`: counting traps answered in the run's stage 3
    (submitted work, held or not: a held answer still says what the worker does) and how many
    of those answers were the lookup answer. An established trap always counts; a pair trap
    only where other stage-3 workers answered it and most of them did not give the lookup
    answer (with stage 2's "none of the above", at least two people besides the worker)."""
    rows = list(
        Answer.objects.filter(
            counted("assignment__"), question__item__run=run, question__item__kind=TRAP_KIND
        ).values_list("assignment__worker_id", "question__item_id", "question__item__tag", "label")
    )
    by_item: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for worker, item, _, label in rows:
        by_item[item].append((worker, label))
    tally: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for worker, item, tag, label in rows:
        if worker not in workers:
            continue
        if tag == PAIR_TRAP:
            others = [other for w, other in by_item[item] if w != worker]
            against = sum(other != LOOKUP_LABEL for other in others)
            if not others or against * 2 <= len(others):
                continue
        tally[worker][0] += 1
        tally[worker][1] += label == LOOKUP_LABEL
    return {w: (n, followed) for w, (n, followed) in tally.items()}


def trap_answers(*, run: Run) -> dict[str, int]:
    """The run's counted answers to stage-3 traps and how many of them gave the lookup answer
    (for the release: what the traps saw)."""
    labels = Answer.objects.filter(
        counted("assignment__"), question__item__run=run, question__item__kind=TRAP_KIND
    ).values_list("label", flat=True)
    answers = list(labels)
    return {
        "trap_answers": len(answers),
        "trap_answers_lookup": sum(label == LOOKUP_LABEL for label in answers),
    }


def lookup_hold_reasons(
    *, batch: Batch, assignments: list[Assignment]
) -> dict[int, list[dict[str, Any]]]:
    """The waiting assignments of workers who follow the lookup on the run's traps."""
    policy = lookup_policy(batch.options)
    follows = lookup_follows(run=batch.run, workers={a.worker_id for a in assignments})
    held: dict[int, list[dict[str, Any]]] = {}
    for assignment in assignments:
        traps, followed = follows.get(assignment.worker_id, (0, 0))
        if traps >= policy["lookup_min_traps"] and followed / traps > policy["lookup_share"]:
            held[assignment.pk] = [
                {
                    "policy": FOLLOWS_LOOKUP,
                    "traps": traps,
                    "followed": followed,
                    "limit": policy["lookup_share"],
                }
            ]
    return held


def lookup_reason_words(reason: dict[str, Any]) -> str:
    return (
        f"On {reason['followed']} of the {reason['traps']} checks where this run's verifiers "
        "agreed the caption does not single out its own COCO image, this worker still picked "
        f"that image (over the limit of {reason['limit']:.0%}, lookup_share): the answer of "
        "someone who looks the pictures up in the public COCO files instead of judging them."
    )
