"""Many workers claiming at once never overfill a HIT (row locks in PostgreSQL)."""

import threading

import pytest
from django.db import connection, transaction

from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Assignment, Hit
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.claim import assignment_claim_next
from annotation.services.work.pools import pool_join
from annotation.services.work.worker_identity import worker_get_or_create
from tests.factories import dataset_factory, paired_run_factory

pytestmark = pytest.mark.django_db(transaction=True)


def _published(tmp_path, image_dir, run_on_commit, *, items: int, workers: int):  # type: ignore[no-untyped-def]
    """A paired run's published selection batch of local HITs: `items` per HIT, `workers`
    per HIT."""
    dataset = dataset_factory(tmp_path, image_dir=image_dir)
    run = paired_run_factory(dataset, run_on_commit=run_on_commit)
    batch = batch_create(
        run=run,
        stage=BisonStage.SELECTION,
        provider="local",
        items_per_hit=items,
        assignments_per_hit=workers,
    )
    return run, batch_publish(batch=batch)


def test_concurrent_claims_fill_each_slot_once(tmp_path, image_dir, run_on_commit):
    run, batch = _published(tmp_path, image_dir, run_on_commit, items=2, workers=2)
    assert batch.hits.count() == 3  # 6 slots
    workers = [worker_get_or_create(provider="local", external_id=f"w{i}") for i in range(12)]
    barrier = threading.Barrier(len(workers))
    got, errors = {}, []

    def claim(worker):
        try:
            barrier.wait()
            got[worker.external_id] = assignment_claim_next(batch=batch, worker=worker)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=claim, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    claimed = [a for a in got.values() if a is not None]
    assert len(claimed) == 6
    per_hit = {}
    for a in Assignment.objects.all():
        per_hit[a.hit_id] = per_hit.get(a.hit_id, 0) + 1
    assert sorted(per_hit.values()) == [2, 2, 2]


def test_a_double_click_gets_the_same_assignment(tmp_path, image_dir, run_on_commit):
    """Two claims at once by one returning worker (a double click, two tabs): never a 500
    from the once-per-worker constraint, never two assignments held at once."""
    run, batch = _published(tmp_path, image_dir, run_on_commit, items=1, workers=10)
    failures = []
    for attempt in range(20):
        worker = worker_get_or_create(provider="local", external_id=f"double-{attempt}")
        pool_join(run=run, worker=worker, stage=BisonStage.SELECTION)  # a returning worker
        barrier = threading.Barrier(2)
        got, errors = [], []

        def claim(worker=worker, barrier=barrier, got=got, errors=errors):
            try:
                barrier.wait()
                got.append(assignment_claim_next(batch=batch, worker=worker))
            except Exception as exc:
                errors.append(type(exc).__name__)
            finally:
                connection.close()

        threads = [threading.Thread(target=claim) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        held = Assignment.objects.filter(worker=worker).count()
        same = len(got) == 2 and None not in got and got[0].pk == got[1].pk
        if errors or not same or held != 1:
            failures.append((attempt, errors, held))
    assert not failures, failures


def test_a_claim_skips_a_held_hit_and_waits_only_when_every_free_one_is_held(
    tmp_path, image_dir, run_on_commit
):
    """Another request holding a HIT's row (its own claim, a recount): a claim takes the next
    free HIT instead of queueing; when every free HIT is held it waits, and takes the first
    once released, never "no work" while a slot remains."""
    run, batch = _published(tmp_path, image_dir, run_on_commit, items=2, workers=1)
    hits = list(batch.hits.order_by("position"))
    assert len(hits) == 3

    def hold(pks, locked, release):  # another transaction holding these HIT rows
        with transaction.atomic():
            list(Hit.objects.select_for_update().filter(pk__in=pks))
            locked.set()
            release.wait(10)
        connection.close()

    def holding(pks):
        locked, release = threading.Event(), threading.Event()
        thread = threading.Thread(target=hold, args=(pks, locked, release))
        thread.start()
        assert locked.wait(10)
        return thread, release

    first = worker_get_or_create(provider="local", external_id="w-first")
    thread, release = holding([hits[0].pk])
    assert assignment_claim_next(batch=batch, worker=first).hit_id == hits[1].pk
    release.set()
    thread.join()

    # HIT 1 is full now; hold the two free ones: the claim waits for HIT 0.
    second = worker_get_or_create(provider="local", external_id="w-second")
    thread, release = holding([hits[0].pk, hits[2].pk])
    got = []

    def claim():
        got.append(assignment_claim_next(batch=batch, worker=second))
        connection.close()

    claimer = threading.Thread(target=claim)
    claimer.start()
    claimer.join(1.0)
    assert claimer.is_alive() and not got  # waiting, not told "no work"
    release.set()
    thread.join()
    claimer.join(10)
    assert got and got[0].hit_id == hits[0].pk
