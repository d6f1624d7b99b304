from decimal import Decimal

import pytest

from annotation.errors import ServiceError
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Batch, Event, Hit, Question
from annotation.services.runs.batches import batch_create, batch_publish
from pipeline.errors import InputError
from tests.factories import selection_done_factory

pytestmark = pytest.mark.django_db


def test_selection_batch_packs_pairs_into_hits(paired_run):
    batch = batch_create(
        run=paired_run, stage=BisonStage.SELECTION, provider="local", items_per_hit=4
    )
    hits = list(batch.hits.order_by("position"))
    assert [h.questions.count() for h in hits] == [4, 2]
    assert Question.objects.filter(hit__batch=batch).values("item").distinct().count() == 6
    # No reward given: the minimum hourly pay ($15) at BISON's 25.9 s per pair (Table 5), 4 pairs.
    assert batch.assignments_per_hit == 1 and batch.reward == Decimal("0.44")
    assert batch.qualifications == {
        "min_approved_hits": 500,
        "min_approval_percent": 97,
        "locales": ["US", "GB", "CA", "AU", "NZ", "IE"],
    }
    with pytest.raises(ServiceError, match="no items waiting"):
        batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="local")


def test_default_is_ten_pairs_per_hit_and_two_verifiers(paired_run):
    batch = batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="simulated")
    assert batch.items_per_hit == 10
    batch_publish(batch=batch)
    from annotation.crowd.simulated.crowd import simulate_crowd
    from pipeline.simulate import WorkerProfile

    simulate_crowd(batch=batch, workers=1, profile=WorkerProfile(accuracy=1.0))
    verification = batch_create(run=paired_run, stage=BisonStage.VERIFICATION, provider="local")
    assert verification.assignments_per_hit == 2 and verification.items_per_hit == 10


def test_stage3_before_stage2_results_is_refused(paired_run):
    with pytest.raises(ServiceError, match="no stage-2 results"):
        batch_create(run=paired_run, stage=BisonStage.VERIFICATION, provider="local")
    batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="local")
    with pytest.raises(ServiceError, match="no stage-2 results"):
        batch_create(run=paired_run, stage=BisonStage.VERIFICATION, provider="local")
    assert Batch.objects.filter(stage=BisonStage.VERIFICATION).count() == 0


def test_verification_sides_are_drawn_on_the_server_and_mixed(paired_run):
    selection_done_factory(paired_run)
    batch = batch_create(
        run=paired_run, stage=BisonStage.VERIFICATION, provider="local", items_per_hit=2
    )
    swapped = list(Question.objects.filter(hit__batch=batch).values_list("swapped", flat=True))
    assert len(swapped) >= 4
    assert any(swapped) and not all(swapped)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"reward": "0"}, "reward"),
        ({"reward": "0.105"}, "reward"),
        ({"reward": "ten"}, "reward"),
        ({"qualifications": {"min_karma": 3}}, "qualifications"),
        ({"qualifications": {"min_approval_percent": 120}}, "min_approval_percent"),
        ({"qualifications": {"locales": ["usa"]}}, "locales"),
        ({"provider": "carrier-pigeon"}, "provider"),
    ],
)
def test_bad_batch_settings_write_nothing(paired_run, kwargs, field):
    args = {"run": paired_run, "stage": BisonStage.SELECTION, "provider": "local", **kwargs}
    with pytest.raises(InputError) as err:
        batch_create(**args)
    assert err.value.field == field
    assert Batch.objects.count() == 0 and Hit.objects.count() == 0


def test_hidden_layout_does_not_follow_the_public_seed(paired_run):
    """Sides come from a secret source: the same public seed twice gives different sides,
    always balanced between left and right; the drawn layout seed is kept for staff."""
    selection_done_factory(paired_run)
    layouts = []
    for _ in range(8):
        batch = batch_create(
            run=paired_run, stage=BisonStage.VERIFICATION, provider="local", seed=0
        )
        swapped = list(
            Question.objects.filter(hit__batch=batch)
            .order_by("item_id")
            .values_list("swapped", flat=True)
        )
        assert len(swapped) >= 4 and abs(sum(swapped) - len(swapped) / 2) <= 0.5
        layouts.append(tuple(swapped))
        event = Event.objects.get(batch=batch, action="batch.created")
        assert isinstance(event.data["layout_seed"], int)
        Batch.objects.filter(pk=batch.pk).delete()  # its triples wait for the next batch
    assert len(set(layouts)) > 1


def test_a_simulated_crowds_layout_follows_the_public_seed(paired_run):
    """Simulated workers are programs: their batch's layout follows its seed, so the same
    simulation gives the same data, while people's batches keep the secret draw above."""
    selection_done_factory(paired_run)
    layouts = []
    for seed in (0, 0, 0):
        batch = batch_create(
            run=paired_run, stage=BisonStage.VERIFICATION, provider="simulated", seed=seed
        )
        swapped = tuple(
            Question.objects.filter(hit__batch=batch)
            .order_by("item_id")
            .values_list("swapped", flat=True)
        )
        assert len(swapped) >= 4 and abs(sum(swapped) - len(swapped) / 2) <= 0.5
        event = Event.objects.get(batch=batch, action="batch.created")
        layouts.append((event.data["layout_seed"], swapped))
        Batch.objects.filter(pk=batch.pk).delete()
    assert len(set(layouts)) == 1


# Every number a batch takes (API, console form and CLI all call batch_create), generated:
# NaN, infinities, negatives, huge values, text and bools are refused with the field named.
BATCH_NUMBERS = {
    "items_per_hit": "items_per_hit",
    "assignments_per_hit": "assignments_per_hit",
    "reward": "reward",
    "lifetime_seconds": "lifetime_seconds",
    "assignment_duration_seconds": "assignment_duration_seconds",
    "auto_approval_delay_seconds": "auto_approval_delay_seconds",
    "seed": "seed",
    "limit": "limit",
    "first_claim_seconds": "options.first_claim_seconds",
}
BAD_NUMBERS = [float("nan"), float("inf"), float("-inf"), -1, 10**18, "12", True, 2.5]


@pytest.mark.parametrize("name", sorted(BATCH_NUMBERS))
def test_every_batch_number_refuses_nan_inf_negative_huge_and_text(paired_run, name):
    for bad in BAD_NUMBERS:
        if name == "reward" and bad in ("12", 2.5):
            continue  # documented: an amount may be given as text or a number ("0.50", 2.5)
        if name == "seed" and bad == -1:
            continue  # a seed may be negative (Batch.seed is a signed 32-bit column)
        given = {"options": {name: bad}} if name == "first_claim_seconds" else {name: bad}
        with pytest.raises(InputError) as err:
            batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="local", **given)
        assert err.value.field == BATCH_NUMBERS[name], (name, bad, err.value.field)
    assert Batch.objects.count() == 0


def test_another_flows_stage_names_the_stage_and_the_runs_flow(paired_run):
    with pytest.raises(InputError) as err:
        batch_create(run=paired_run, stage="cxc_sis", provider="local")
    assert err.value.field == "stage"
    assert "cxc_sis" in str(err.value) and "bison" in str(err.value).lower()
