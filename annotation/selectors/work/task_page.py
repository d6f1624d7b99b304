"""A worker's task page: what it shows, built from the task type, never from gold or hidden
fields (the pages themselves are each provider's, `annotation/crowd/<provider>/views.py`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.core.cache import caches
from django.db import connection

from annotation.models import Hit, Question
from annotation.selectors.work.drafts import draft_view
from annotation.selectors.work.hit_cache import hit_cached
from annotation.selectors.work.images import ImageLinks, image_places
from annotation.selectors.work.run_texts import run_instructions
from annotation.tasktypes import task_type_for

# A HIT's questions and their items never change once the HIT exists (a re-offer makes a
# new HIT), so every worker of the HIT gets the same view: built once
# (selectors/work/hit_cache.py), then read from memory with no SQL (the page's template caches
# the rendered questions per process). Its image URLs hold a placeholder for the page key,
# filled in per assignment (`pages/work/render.task_render`).


def hit_view(*, hit_id: int) -> dict[str, Any]:
    return hit_cached(
        f"hit-view:v2:{hit_id}",
        lambda: _hit_view(Hit.objects.select_related("batch").get(pk=hit_id)),
    )


@dataclass(frozen=True)
class TaskPage:
    """What a local worker's task page needs to know about its assignment."""

    assignment_id: int
    state: str
    worker_id: int
    hit_id: int
    batch_id: int
    stage: str
    # The run's own instructions for the stage ("" : the task type's own).
    instructions: str = ""
    # The worker's answers in progress (`selectors/drafts.draft_view`); None: none saved.
    draft: dict[str, Any] | None = None


# The hottest read of the worker's path, in one statement: the assignment, its batch and run,
# the worker's invitation to that run (valid if not revoked and consented to a text of the
# run: a task taken before the text changed is still theirs to finish), and the worker's answers
# in progress (a draft: by its unique key). Plain SQL: the ORM's compiling of this join cost
# more than running it.
_TASK_PAGE_SQL = """
SELECT a.id, a.state, a.worker_id, a.hit_id, b.id, b.stage, r.config, i.consent_version, r.id,
  d.answers, d.updated_at
FROM annotation_assignment a
JOIN annotation_hit h ON h.id = a.hit_id
JOIN annotation_batch b ON b.id = h.batch_id
JOIN annotation_run r ON r.id = b.run_id
JOIN annotation_worker w ON w.id = a.worker_id
JOIN annotation_invitation i
  ON i.run_id = r.id AND i.worker_id = a.worker_id AND i.revoked_at IS NULL
LEFT JOIN annotation_assignmentdraft d ON d.assignment_id = a.id
WHERE a.id = %s AND a.worker_id = %s AND w.provider = %s AND b.provider = %s
"""


# Once an assignment's page has been shown, what never changes about it is kept in this
# process's memory (the "assignments" cache): its HIT, batch, stage and run. A later view then
# reads only what can change, by primary keys (_KNOWN_SQL): the assignment's worker and state,
# the worker's invitation to the run (revoked? consented?), the run's texts and the draft.
# Besides the fewer joins, its plan cannot go stale: the join above, planned once per
# connection while the assignment table is small, goes on scanning that table as it grows
# (issue 32), where a lookup of one row by its primary key stays one.
_KNOWN_SQL = """
SELECT a.state, a.hit_id, r.config, i.consent_version, d.answers, d.updated_at
FROM annotation_assignment a
JOIN annotation_run r ON r.id = %s
LEFT JOIN annotation_invitation i
  ON i.run_id = r.id AND i.worker_id = a.worker_id AND i.revoked_at IS NULL
LEFT JOIN annotation_assignmentdraft d ON d.assignment_id = a.id
WHERE a.id = %s AND a.worker_id = %s
"""


@dataclass(frozen=True)
class _Known:
    """What never changes about an assignment whose page was shown (checked by _TASK_PAGE_SQL
    once: its batch and its worker are the provider's)."""

    provider: str
    hit_id: int
    batch_id: int
    stage: str
    run_id: int


def _known_key(assignment_id: int) -> str:
    return f"assignment:v1:{assignment_id}"


def task_page(*, assignment_id: int, worker_id: int, provider: str) -> TaskPage | None:
    """`worker_id`'s assignment `assignment_id` of a `provider` batch, if the worker's
    invitation to its run is valid and consented; else None (one query)."""
    store = caches["assignments"]
    known: _Known | None = store.get(_known_key(assignment_id))
    if known is not None and known.provider == provider:
        row = _row(_KNOWN_SQL, [known.run_id, assignment_id, worker_id])
        if row is None:  # not this worker's assignment (the ids are the database's own)
            return None
        state, hit, config, consented, *draft = row
        if hit == known.hit_id:
            return _page(
                assignment_id,
                state,
                worker_id,
                known.hit_id,
                known.batch_id,
                known.stage,
                config,
                consented,
                draft_view(*draft),
            )
        # Another HIT: not the assignment remembered (a database put back): read it afresh.
    row = _row(_TASK_PAGE_SQL, [assignment_id, worker_id, provider, provider])
    if row is None:
        return None
    pk, state, worker, hit, batch, stage, config, consented, run, *draft = row
    store.set(_known_key(pk), _Known(provider, hit, batch, stage, run), None)
    return _page(pk, state, worker, hit, batch, stage, config, consented, draft_view(*draft))


def _row(sql: str, params: list[Any]) -> tuple[Any, ...] | None:
    """The statement's first row."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


def _page(
    pk: int,
    state: str,
    worker: int,
    hit: int,
    batch: int,
    stage: str,
    config: Any,
    consented: str | None,
    draft: dict[str, Any] | None,
) -> TaskPage | None:
    """The page, if the invitation (None: none valid) was consented to. A task taken under an
    earlier consent text stays the worker's to finish, under the version they accepted (the
    `Consent` rows keep when, the assignment its `consent_version`); the next claim needs the
    current text (`invited_worker`), so they are asked again before their next task, and no
    answer in progress is lost (`draft`: the answers saved so far, restored on the page)."""
    if isinstance(config, str):  # a database without a JSON type returns text
        config = json.loads(config)
    if not consented:
        return None
    return TaskPage(pk, state, worker, hit, batch, stage, run_instructions(config, stage), draft)


def hit_questions(*, hit_id: int) -> list[Question]:
    """A HIT's questions, in order, with what showing them and reading their answers needs:
    loaded once for the page and the submit (two queries)."""
    return hit_cached(
        f"hit-questions:v2:{hit_id}",
        lambda: list(
            Question.objects.filter(hit_id=hit_id)
            .select_related(
                "item__positive__dataset",
                "item__negative__dataset",
                "item__caption",
                "item__caption2",
                "item__candidate",
                "item__candidate2",
                "item__run",
            )
            .prefetch_related("item__positive__captions")
            .order_by("position")
        ),
    )


def _hit_view(hit: Hit) -> dict[str, Any]:
    task = task_type_for(hit.batch.stage)
    questions = hit_questions(hit_id=hit.pk)
    images = ImageLinks()
    shown = [
        {
            "key": f"q{q.position}",
            "number": q.position + 1,
            **task.question_view(question=q, images=images.question(q.position)),
        }
        for q in questions
    ]
    return {
        "hit_id": hit.pk,
        "template": task.template_name,
        "title": task.title,
        "questions": shown,
        # Server side only (never rendered): what each image URL of the page shows.
        "image_places": image_places(images.places),
    }


def hit_image_places(hit_id: int) -> dict[str, tuple[int, int]]:
    """What each `/img/<page key>/<place>` of the HIT's pages shows (cached with its view)."""
    places: dict[str, tuple[int, int]] = hit_view(hit_id=hit_id)["image_places"]
    return places
