"""ECCV Caption reads: verified positives, exclusions and the paper's counts, aggregated in SQL."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
from django.conf import settings
from django.db.models import Count, F, Q, QuerySet

from annotation.flows.eccv.models import Annotator, Proposal
from annotation.flows.eccv.positive_links import (
    Pairs,
    PositiveLinks,
    cxc_pairs,
    positive_links,
    query_originals,
    source_names,
)
from annotation.flows.eccv.settings import eccv_settings
from annotation.flows.eccv.vocabulary import EccvItemKind, EccvStage
from annotation.models import Answer, GoldItemKind, Item, Run, RunStatus
from annotation.selectors.counting import counted_reviewed
from annotation.selectors.int_arrays import int_arrays
from pipeline.aggregation import dawid_skene, weighted_majority
from pipeline.dense import distinct_ints
from pipeline.eccv_vocabulary import NEGATIVE_ANSWERS, POSITIVE_ANSWERS
from pipeline.redundancy import RedundancyPolicy, Vote, decide, needs_more, reliability

if TYPE_CHECKING:  # django-stubs' helper for querysets with annotations (not needed at run time)
    from django_stubs_ext import WithAnnotations

POSITIVE = ("yes", "partially_yes")
DEFAULT_EXCLUSIONS = Path(settings.BASE_DIR) / "data" / "eccv" / "eccv_exclusions.json"


class JudgedCounts(TypedDict):
    n: int
    n_yes: int
    n_positive: int


def eccv_judged_pairs(*, run: Run) -> QuerySet[WithAnnotations[Item, JudgedCounts]]:
    """Candidates with their counted answers: `n` in all, `n_positive` YES or Partially YES."""
    counted = counted_reviewed("questions__answers__")
    return (
        Item.objects.filter(run=run, kind=EccvItemKind.CANDIDATE)
        .annotate(
            n=Count("questions__answers", filter=counted),
            n_yes=Count("questions__answers", filter=counted & Q(questions__answers__label="yes")),
            n_positive=Count(
                "questions__answers", filter=counted & Q(questions__answers__label__in=POSITIVE)
            ),
        )
        .filter(n__gt=0)
    )


def eccv_positive_pairs(*, run: Run) -> QuerySet[WithAnnotations[Item, JudgedCounts]]:
    """Judged candidates most of whose answers are YES or Partially YES (ties count positive)."""
    return eccv_judged_pairs(run=run).filter(n_positive__gte=F("n") - F("n_positive"))


ANSWER_CLASSES = ("yes", "partially_yes", "mostly_no", "no")  # the 4-level scale, in order


GOLD_EXPECTED: dict[str, frozenset[str]] = {
    GoldItemKind.POSITIVE: POSITIVE_ANSWERS,
    GoldItemKind.NEGATIVE: NEGATIVE_ANSWERS,
}


def eccv_worker_gold(run: Run) -> dict[int, tuple[int, int]]:
    """Per worker (Worker pk): right and total counted answers on the run's gold items."""
    rows = (
        Answer.objects.filter(counted_reviewed(""), question__item__run=run)
        .filter(question__item__kind__in=list(GOLD_EXPECTED))
        .values_list("assignment__worker_id", "question__item__kind", "label")
    )
    right: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for worker, kind, label in rows:
        right[worker][0] += label in GOLD_EXPECTED[kind]
        right[worker][1] += 1
    return {w: (ok, n) for w, (ok, n) in right.items()}


def eccv_worker_gold_accuracy(*, run: Run) -> dict[int, float]:
    """Each worker's accuracy on the run's gold items (by Worker pk), smoothed towards 85 %
    with the weight of four gold answers (`pipeline.redundancy.reliability`), so that two
    gold items do not make a worker certain."""
    return {w: reliability(ok, n) for w, (ok, n) in eccv_worker_gold(run).items()}


def eccv_policy(run: Run) -> RedundancyPolicy:
    """The run's adaptive-redundancy policy (`adaptive` settings; defaults otherwise)."""
    return RedundancyPolicy.from_options(dict(eccv_settings(run).adaptive or {}))


def eccv_votes(*, run: Run) -> dict[int, list[Vote]]:
    """Per judged candidate (Item pk), its counted answers as binary votes weighted by each
    worker's gold reliability; a worker who judged a pair twice counts once (the first)."""
    accuracy = eccv_worker_gold_accuracy(run=run)
    rows = (
        Answer.objects.filter(counted_reviewed(""), question__item__run=run)
        .filter(question__item__kind=EccvItemKind.CANDIDATE)
        .order_by("pk")
        .values_list("question__item_id", "assignment__worker_id", "label")
    )
    votes: dict[int, list[Vote]] = defaultdict(list)
    seen: set[tuple[int, int]] = set()
    for item, worker, label in rows:
        if (item, worker) in seen:
            continue
        seen.add((item, worker))
        votes[item].append((label in POSITIVE_ANSWERS, accuracy.get(worker, reliability(0, 0))))
    return votes


def eccv_follow_up_items(*, run: Run) -> list[int]:
    """Judged candidates the run's policy wants another judgment for (uncertain posterior,
    fewer than `cap` judgments), not already waiting in an open batch."""
    policy = eccv_policy(run)
    waiting = set(
        Item.objects.filter(run=run, questions__hit__batch__stage=EccvStage.JUDGMENT)
        .filter(questions__answers__isnull=True, questions__hit__status="open")
        .values_list("pk", flat=True)
    )
    return sorted(
        item
        for item, got in eccv_votes(run=run).items()
        if item not in waiting and needs_more(got, policy)
    )


def eccv_positive_item_ids(*, run: Run) -> set[int]:
    """Judged candidates (Item pks) people call positive, by the run's `aggregation`:
    "majority" (the default, the paper's reading; ties positive), "weighted_majority" (votes
    weighted by each worker's gold accuracy) or "dawid_skene" (EM over each worker's 4-level
    confusion matrix, gold items included as ordinary evidence); positive when YES or
    Partially YES has at least half the weight or posterior; "posterior" (with `adaptive`
    runs: votes weighted by gold reliability against the prior share of positives)."""
    aggregation = eccv_settings(run).aggregation_rule
    if aggregation == "majority":
        return set(eccv_positive_pairs(run=run).values_list("pk", flat=True))
    if aggregation == "posterior":  # the adaptive policy's own reading
        policy = eccv_policy(run)
        return {item for item, got in eccv_votes(run=run).items() if decide(got, policy)}
    rows = list(
        Answer.objects.filter(counted_reviewed(""), question__item__run=run)
        .filter(question__hit__batch__stage=EccvStage.JUDGMENT)
        .values_list("question__item_id", "assignment__worker_id", "label")
    )
    if not rows:
        return set()
    code = {label: n for n, label in enumerate(ANSWER_CLASSES)}
    items, workers, labels = (
        np.array([r[0] for r in rows]),
        np.array([r[1] for r in rows]),
        np.array([code[r[2]] for r in rows]),
    )
    k = len(ANSWER_CLASSES)
    if aggregation == "weighted_majority":
        accuracy = eccv_worker_gold_accuracy(run=run)
        result = weighted_majority(items, workers, labels, k=k, accuracy=accuracy)
    else:
        result = dawid_skene(items, workers, labels, k=k)
    positive = result.posterior[:, :2].sum(axis=1) >= 0.5
    chosen = {int(i) for i, p in zip(result.items, positive, strict=True) if p}
    # The run's candidates among them (gold items are evidence, not pairs), read by the run,
    # not by an id list.
    candidates = Item.objects.filter(run=run, kind=EccvItemKind.CANDIDATE)
    return chosen & set(candidates.values_list("pk", flat=True))


def eccv_human_positives(*, run: Run) -> list[tuple[int, int]]:
    """(image, caption) COCO ids of the judged candidates people call positive (see
    `eccv_positive_item_ids`), read by the run: no id list goes to the database."""
    if eccv_settings(run).aggregation_rule == "majority":
        return list(
            eccv_positive_pairs(run=run).values_list("positive__coco_id", "caption__coco_id")
        )
    positive = eccv_positive_item_ids(run=run)
    return [
        (image, caption)
        for pk, image, caption in Item.objects.filter(
            run=run, kind=EccvItemKind.CANDIDATE
        ).values_list("pk", "positive__coco_id", "caption__coco_id")
        if pk in positive
    ]


def eccv_exclusions(*, run: Run) -> tuple[set[int], set[int]]:
    """Caption ids and image ids dropped in post-processing (default: the paper's lists)."""
    path = Path(eccv_settings(run).exclusions or DEFAULT_EXCLUSIONS)
    data = json.loads(path.read_text())
    captions = {
        int(c["caption_id"])
        for key in ("meaningless_captions", "semantically_wrong_captions")
        for c in data.get(key, [])
    }
    captions |= {int(c) for c in data.get("caption_ids", [])}
    images = {int(i["image_id"]) for i in data.get("duplicate_images", [])}
    images |= {int(i) for i in data.get("image_ids", [])}
    return captions, images


def eccv_positives(*, run: Run) -> dict[str, Any]:
    """The post-processed positives of the run's queries, with the source of every link.

    Sources: "coco" (the original COCO pairs of the queries, as ECCV Caption keeps them; on
    unless the run's config sets `original_positives` false), "human" (verified candidates)
    and "cxc" (imported CxC positives); excluded captions and images are dropped.
    """
    human = eccv_human_positives(run=run)
    links = eccv_positive_links(
        run=run,
        human=(
            np.array([i for i, _ in human], dtype=np.int64),
            np.array([c for _, c in human], dtype=np.int64),
        ),
    )
    return {
        "i2t": links.i2t,
        "t2i": links.t2i,
        "sources": {
            f"{i}:{c}": source_names(s)
            for i, c, s in zip(
                links.image.tolist(), links.caption.tolist(), links.sources.tolist(), strict=True
            )
        },
        "dropped_by_exclusions": links.dropped,
        "queries_without_positives": links.queries_without_positives,
    }


def eccv_positive_links(*, run: Run, human: Pairs, originals: Pairs | None = None) -> PositiveLinks:
    """`eccv_positives` as columns, from the pairs people call positive (`human`) and, when
    the caller has read them, the queries' original pairs (`query_originals`)."""
    bad_captions, bad_images = eccv_exclusions(run=run)
    settings = eccv_settings(run)
    with_originals = settings.original_positives
    if with_originals and originals is None:
        originals = query_originals(run)
    return positive_links(
        query_images=settings.query_images,
        query_captions=settings.query_captions,
        bad_images=bad_images,
        bad_captions=bad_captions,
        originals=originals if with_originals else None,
        human=human,
        cxc=cxc_pairs(run),
    )


def eccv_original_positives(
    *, run: Run, originals: Pairs | None = None
) -> dict[str, dict[int, list[int]]]:
    """The original COCO pairs of the run's queries (each caption's own image);
    `originals` (`query_originals`) when the caller has read them already."""
    settings = eccv_settings(run)
    query_images, caption_queries = settings.query_images, settings.query_captions
    # Only the queries' rows: the gallery's other captions cannot be among them.
    images, captions = query_originals(run) if originals is None else originals
    i2t: dict[int, list[int]] = defaultdict(list)
    t2i: dict[int, list[int]] = {}
    for image, caption in zip(images.tolist(), captions.tolist(), strict=True):
        i2t[image].append(caption)
        t2i[caption] = [image]
    return {
        "i2t": {q: sorted(i2t[q]) for q in query_images if q in i2t},
        "t2i": {q: t2i[q] for q in caption_queries if q in t2i},
    }


def eccv_answer_shares(*, run: Run) -> dict[str, dict[str, dict[str, float]]]:
    """For each model and rank, the share of each answer among its proposals' answers."""
    counted = counted_reviewed("item__questions__answers__")
    rows = (
        Proposal.objects.filter(item__run=run)
        .filter(counted)
        .values("annotator__name", "rank", label=F("item__questions__answers__label"))
        .annotate(n=Count("pk"))
    )
    totals: dict[tuple[str, int], int] = defaultdict(int)
    counts: dict[tuple[str, int], dict[str, int]] = defaultdict(dict)
    for row in rows:
        key = (row["annotator__name"], row["rank"])
        counts[key][row["label"]] = row["n"]
        totals[key] += row["n"]
    shares: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)
    for (model, rank), labels in sorted(counts.items()):
        shares[model][str(rank)] = {
            label: round(100.0 * labels.get(label, 0) / totals[(model, rank)], 2)
            for label in ("yes", "partially_yes", "mostly_no", "no")
        }
    return dict(shares)


def eccv_funnel(run: Run) -> list[tuple[str, int | None]]:
    """Model proposals, the pairs they merge into, pairs judged, pairs judged positive; the
    judgments are not started while no judgment batch is published."""
    judging = run.batches.exclude(status="draft").filter(stage=EccvStage.JUDGMENT).exists()
    proposals = Proposal.objects.filter(item__run=run).count()
    started = proposals or run.status != RunStatus.CREATED
    return [
        ("proposals", proposals if started else None),
        (
            "candidate pairs",
            Item.objects.filter(run=run, kind=EccvItemKind.CANDIDATE).count() if started else None,
        ),
        ("judged", eccv_judged_pairs(run=run).count() if judging else None),
        ("positives", eccv_positive_pairs(run=run).count() if judging else None),
    ]


def eccv_item_proposers(run: Run) -> dict[int, list[tuple[str, str]]]:
    """Per candidate (Item pk), the annotators that proposed it, each with the sha256 of the
    model checkpoint it ranked with ("" where the annotator recorded none: FastText trained
    in the run, a file of ranked lists), in the annotators' order, each once."""
    # The run's few annotators once, then the proposals' two ids by COPY: reading each
    # proposal's annotator name and params (JSON decoded per row) took 0.9 s of ECCV's
    # export at val2014 (250,000 proposals).
    annotators = {
        pk: (name, str((params or {}).get("checkpoint_sha256") or ""))
        for pk, name, params in Annotator.objects.filter(run=run).values_list(
            "pk", "name", "params"
        )
    }
    ids = int_arrays(
        Proposal.objects.filter(item__run=run),
        {"item": ("item_id", np.int64), "annotator": ("annotator_id", np.int64)},
    )
    span = int(ids["annotator"].max(initial=0)) + 1
    pairs = distinct_ints(ids["item"] * span + ids["annotator"])  # by item, then annotator
    out: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for item, annotator in zip((pairs // span).tolist(), (pairs % span).tolist(), strict=True):
        out[item].append(annotators[annotator])
    return dict(out)
