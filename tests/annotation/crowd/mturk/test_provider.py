"""MTurk's adapter (annotation/crowd/mturk/provider.py) beyond the provider contract: the review
actions (notify, extend, block, unblock) reach MTurk once; every call checked by botocore's
Stubber. Its publishing, client, fees, worker page and synchronisation are tested beside their
modules (test_publish.py, test_client.py, test_fees.py, test_views.py, test_sync.py)."""

import pytest
from botocore.stub import ANY

from annotation.models import Event
from tests.annotation.crowd.mturk.test_publish import published_batch

pytestmark = pytest.mark.django_db


def test_review_actions_notify_extend_and_unblock(mt, draft):
    batch = published_batch(mt, draft)
    a = mt.take(batch, "W1")
    mt.submit(a, {"q0": "none", "q1": "none"})
    from annotation.services.money.batch_extension import batch_extend
    from annotation.services.work.worker_actions import worker_block, worker_unblock, workers_notify

    mt.expect(
        "NotifyWorkers",
        {"NotifyWorkersFailureStatuses": []},
        {"Subject": "Thanks", "MessageText": "More HITs soon", "WorkerIds": ["W1"]},
    )
    assert workers_notify(workers=[a.worker], subject="Thanks", message="More HITs soon") == 1
    assert workers_notify(workers=[a.worker], subject="Thanks", message="More HITs soon") == 0
    for hit in batch.hits.all():
        mt.expect("UpdateExpirationForHIT", {}, {"HITId": hit.provider_hit_id, "ExpireAt": ANY})
    batch_extend(batch=batch, seconds=3600)
    mt.expect("CreateWorkerBlock", {}, {"WorkerId": "W1", "Reason": "spam"})
    worker_block(worker=a.worker, reason="spam")
    mt.expect("DeleteWorkerBlock", {}, {"WorkerId": "W1", "Reason": "appeal accepted"})
    worker_unblock(worker=a.worker, reason="appeal accepted")
    worker_unblock(worker=a.worker, reason="appeal accepted")
    actions = list(Event.objects.filter(worker=a.worker).values_list("action", flat=True))
    assert (
        actions.count("worker.notified") == 1
        and "worker.blocked" in actions
        and actions.count("worker.unblocked") == 1
    )
    assert Event.objects.filter(batch=batch, action="batch.extended").exists()
