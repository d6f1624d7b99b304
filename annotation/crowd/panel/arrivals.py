"""New arrivals by a panel's study link, which has no API behind it: anyone holding the link can
type any participant id (issue 47). A new participant (an id the session is not bound to yet,
with no submitted work in the batch) is counted per client address and per batch; past
either limit the study link answers a page saying to come back, and writes nothing. Returning
participants with submitted work are never held back."""

from __future__ import annotations

from django.http import HttpRequest

from annotation.crowd.panel.selectors import submitted_count
from annotation.models import Batch, Worker
from annotation.ratelimit import client_address, rate_allow

BUSY_ADDRESS = (
    "Many people started this study from your network in the last minute. Please wait a "
    "minute, then open the study link again (reload this page)."
)
BUSY_BATCH = (
    "Many people are starting this study right now. Please wait a minute, then open the "
    "study link again (reload this page)."
)


def arrival_refusal(request: HttpRequest, *, batch: Batch, worker: Worker | None) -> str | None:
    """Count a new participant's arrival by `batch`'s study link (`worker`: the row their id
    names, if any); the reason to refuse it, or None. Per address first, so one address's
    flood spends its own allowance before the batch's."""
    if worker is not None and submitted_count(batch=batch, worker=worker):
        return None  # they worked on the batch: coming back, not arriving
    if not rate_allow("panel-arrival", client_address(request)):
        return BUSY_ADDRESS
    if not rate_allow("panel-batch-arrival", f"batch:{batch.pk}"):
        return BUSY_BATCH
    return None
