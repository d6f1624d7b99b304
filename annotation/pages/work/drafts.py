"""A task page's answers in progress, posted by its script after each change (issue 46),
whichever provider's page it is: each provider's draft view checks the session holds the
assignment, then answers through `draft_post`."""

from __future__ import annotations

import json

from django.http import HttpRequest, JsonResponse

from annotation.errors import AnswerError, NotAssignmentHolder, ServiceError
from annotation.ratelimit import rate_allow
from annotation.services.work.drafts import draft_save

# A draft is the form's values: a few kB at most (a 100-question HIT with every follow-up
# ticked is under 16 kB); anything longer is not one, and is not read.
MAX_BYTES = 32 * 1024
# What the page tells a worker whose session ended (its script shows it; a provider's page
# names its own way back in).
SESSION_ENDED = "your session ended"


def draft_post(request: HttpRequest, *, assignment_id: int, worker_id: int) -> JsonResponse:
    """Save the posted draft (`{"answers": {name: [values]}}`) of `worker_id`'s assignment;
    the caller checked the session holds it. Rate-limited per worker (the page posts at most
    one save a second or so), bounded in size, and every name and value checked."""
    if not rate_allow("draft-save", f"worker:{worker_id}"):
        return JsonResponse({"error": "too many saves: the next change saves again"}, status=429)
    try:
        length = int(request.headers.get("Content-Length") or 0)
    except ValueError:
        length = MAX_BYTES + 1
    if length > MAX_BYTES or len(request.body) > MAX_BYTES:
        return JsonResponse({"error": "a draft is a few kB at most"}, status=413)
    try:
        body = json.loads(request.body)
    except ValueError:
        return JsonResponse({"error": "the body is not JSON"}, status=400)
    answers = body.get("answers") if isinstance(body, dict) else None
    try:
        draft = draft_save(assignment_id=assignment_id, worker_id=worker_id, answers=answers)
    except AnswerError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    except NotAssignmentHolder:
        return JsonResponse({"error": "no such task for this worker"}, status=404)
    except ServiceError as exc:  # submitted, closed or too late: nothing left to keep
        return JsonResponse({"error": str(exc)}, status=409)
    return JsonResponse({"saved": int(draft.updated_at.timestamp() * 1000)})


def draft_session_ended() -> JsonResponse:
    """A draft posted from a session that holds no worker any more (expired, or signed out):
    the page keeps its answers and asks the worker to come back in by their link."""
    return JsonResponse({"error": SESSION_ENDED}, status=403)
