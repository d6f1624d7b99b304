import hashlib
import json
import statistics
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db.models import Count
from django.utils import timezone

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.errors import ServiceError
from annotation.flows.bison.selectors import bison_stage_counts, bison_verified_triples
from annotation.flows.bison.services.export import bison_export_start
from annotation.flows.bison.tally import bison_tally
from annotation.flows.bison.vocabulary import BisonItemKind, BisonStage
from annotation.models import Answer, Assignment, AssignmentState, Export, Item, Question
from annotation.selectors.counting import counted
from annotation.selectors.work.invitations import run_consent
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.claim import assignment_claim_next
from annotation.services.work.submit import assignment_submit
from annotation.services.work.worker_identity import worker_get_or_create
from pipeline.bison import parse_bison_annotations
from pipeline.simulate import WorkerProfile
from tests.factories import selection_done_factory, verify_every_hit

pytestmark = pytest.mark.django_db


@pytest.fixture
def verification(paired_run):
    selection_done_factory(paired_run, workers=1)
    return batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.VERIFICATION, provider="local", items_per_hit=100
        )
    )


def answer_all(batch, name, pick):
    worker = worker_get_or_create(provider="local", external_id=name)
    assignment = assignment_claim_next(batch=batch, worker=worker)
    answers = {f"q{q.position}": pick(q) for q in assignment.hit.questions.select_related("item")}
    assignment_submit(assignment_id=assignment.pk, worker=worker, answers=answers)
    return assignment


def positive_side(q):
    return "right" if q.swapped else "left"


def negative_side(q):
    return "left" if q.swapped else "right"


def test_a_triple_is_verified_only_if_both_verifiers_pick_the_positive(verification):
    questions = list(
        Question.objects.filter(hit__batch=verification, item__kind=BisonItemKind.TRIPLE).order_by(
            "position"
        )
    )  # (traps aside, issue 47)
    assert len(questions) >= 4
    disputed = {questions[0].item_id: "negative", questions[1].item_id: "both"}

    def second(q):
        how = disputed.get(q.item_id)
        return {"negative": negative_side(q), "both": "both"}.get(how, positive_side(q))

    run = verification.run

    def one_vote_is_not_enough():
        assert not bison_verified_triples(run=run).exists()
        counts = bison_stage_counts(run=run)["stage3"]
        assert counts["triples_judged"] == 0 and counts["verified"] == 0

    # Stage-3 HITs are image-disjoint and nobody takes two HITs showing one image: each
    # verifier's way of answering is played by a worker per HIT.
    verify_every_hit(
        verification, {"v1": positive_side, "v2": second}, after_first=one_vote_is_not_enough
    )
    hits = verification.hits.count()
    verified = set(bison_verified_triples(run=run).values_list("pk", flat=True))
    all_triples = set(
        Item.objects.filter(run=run, kind=BisonItemKind.TRIPLE).values_list("pk", flat=True)
    )
    assert verified == all_triples - set(disputed)
    counts = bison_stage_counts(run=run)
    assert counts["stage3"]["triples_judged"] == len(all_triples)
    assert counts["stage3"]["verified"] == len(all_triples) - 2
    assert counts["stage3"]["workers"] == 2 * hits
    assert counts["stage2"]["pairs_judged"] == 6

    # Rejected work stops counting.
    Assignment.objects.filter(worker__external_id__startswith="v2").update(
        state=AssignmentState.REJECTED
    )
    assert not bison_verified_triples(run=run).exists()


def test_counts_are_aggregated_in_the_database(verification, django_assert_max_num_queries):
    verify_every_hit(verification, {"v1": positive_side, "v2": positive_side})
    # The number of queries does not grow with the number of answers or items (each answer
    # read by `int_arrays` is four statements: its COPY between setting enable_sort off and back).
    with django_assert_max_num_queries(14):
        counts = bison_stage_counts(run=verification.run)
    assert counts["stage3"]["verified"] == counts["stage2"]["triples"]


def test_export_writes_the_official_layout_with_a_manifest(paired_run, run_on_commit, capsys):
    run = paired_run
    selection_done_factory(run, workers=2, accuracy=1.0)
    batch = batch_publish(
        batch=batch_create(
            run=run, stage=BisonStage.VERIFICATION, provider="simulated", items_per_hit=2
        )
    )
    # Nobody takes two HITs showing one image: each of the three pairs (in both orders) is in
    # every HIT's worth of questions, so six workers share the HITs.
    simulate_crowd(batch=batch, workers=6, profile=WorkerProfile(accuracy=1.0))
    verifiers = (
        Assignment.objects.filter(hit__batch=batch, state=AssignmentState.SUBMITTED)
        .values("worker")
        .distinct()
        .count()
    )
    assert verifiers > 3
    verified = bison_verified_triples(run=run).count()
    assert verified == Item.objects.filter(run=run, kind=BisonItemKind.TRIPLE).count() > 0

    job = run_on_commit(bison_export_start, run=run)
    job.refresh_from_db()
    assert job.state == "succeeded", job.error
    export = Export.objects.get(run=run)
    path = Path(export.path)
    raw = path.read_bytes()
    assert hashlib.sha256(raw).hexdigest() == export.checksum
    document = json.loads(raw)
    assert document["info"] == {"source": "coco", "split": "val2014"}
    assert len(document["data"]) == verified
    record = document["data"][0]
    assert set(record) == {"bison_id", "caption_id", "true_image_id", "image_candidates"}
    assert [set(c) for c in record["image_candidates"]] == [{"image_id", "image_filename"}] * 2
    assert record["true_image_id"] in [c["image_id"] for c in record["image_candidates"]]
    records = parse_bison_annotations(raw, file=str(path))
    assert [r.bison_id for r in records] == list(range(verified))

    manifest = json.loads((path.parent / "manifest.json").read_text())
    assert manifest["sha256"] == export.checksum and manifest["records"] == verified
    assert manifest["stage1"]["pairs"] == 6 and manifest["stage1"]["embedding_dim"] == 12
    # The factory's vectors make three mutual nearest-neighbour edges, each in both orders.
    assert manifest["stage1"]["edges"] == 3 and manifest["stage1"]["mutual_edges"] == 3
    assert manifest["stage1"]["ordered_pairs"] == 6
    assert manifest["stage1"]["cosines"]["degenerate"] is False
    assert manifest["stage2"]["workers"] == 2 and manifest["stage3"]["workers"] == verifiers
    assert manifest["stage3"]["conversion_percent"] == 100.0
    assert manifest["stage2"]["median_seconds_per_annotation"] > 0
    # The information and consent text workers were shown, with its version.
    assert manifest["consent"]["version"] == run_consent(export.run)["version"]
    assert "research study" in manifest["consent"]["text"]
    sheet = (path.parent / "DATASHEET.md").read_text()
    assert "# Datasheet: COCO-BISON export" in sheet and "## Pay" in sheet
    # Simulated workers: the export is scored against the simulated world's latent truth.
    quality = sheet.split("## Quality estimate")[1]
    assert "verified precision" in quality and "stage-3 recall" in quality
    # Pay per batch: expected (with its source) and effective hourly.
    assert {p["stage"] for p in manifest["pay"]} == {"bison_selection", "bison_verification"}
    assert all("hourly" in p["expected"] and "hourly" in p["effective"] for p in manifest["pay"])

    # The evaluation command scores a perfect and a wrong predictions file.
    perfect = path.parent / "perfect.json"
    perfect.write_text(
        json.dumps(
            [{"bison_id": r.bison_id, "predicted_image_id": r.true_image_id} for r in records]
        )
    )
    call_command("bison_evaluate", annotations=str(path), predictions=str(perfect))
    assert "BISON accuracy: 100.00%" in capsys.readouterr().out
    wrong = path.parent / "wrong.json"
    wrong.write_text(
        json.dumps(
            [
                {
                    "bison_id": r.bison_id,
                    "predicted_image_id": next(
                        c[0] for c in r.candidates if c[0] != r.true_image_id
                    ),
                }
                for r in records
            ]
        )
    )
    call_command("bison_evaluate", annotations=str(path), predictions=str(wrong))
    assert "BISON accuracy: 0.00%" in capsys.readouterr().out

    # A redelivered export task writes no second version.
    from annotation.services.release.export_jobs import export_job_write as bison_export_write

    assert bison_export_write(job_id=job.pk) == export
    assert Export.objects.filter(run=run).count() == 1

    # A second export is a new version; the first file is untouched.
    run_on_commit(bison_export_start, run=run)
    assert sorted(Export.objects.filter(run=run).values_list("version", flat=True)) == [1, 2]
    assert path.read_bytes() == raw


def test_export_without_verified_triples_is_refused(paired_run):
    from annotation.errors import ServiceError

    with pytest.raises(ServiceError, match="no verified triples"):
        bison_export_start(run=paired_run)


def test_reference_files_score_as_the_official_script(reference_data, capsys):
    annotations = reference_data / "bison_annotations.cocoval2014.subset.reconstructed.json"
    predictions = reference_data / "bison_fake_predictions.cocoval2014.subset.json"
    call_command("bison_evaluate", annotations=str(annotations), predictions=str(predictions))
    assert "BISON accuracy: 52.15% (413/792)" in capsys.readouterr().out


def test_answers_store_the_label_not_just_the_click(verification):
    answer_all(verification, "v1", positive_side)
    answers = Answer.objects.filter(question__hit__batch=verification)
    assert set(answers.values_list("label", flat=True)) == {"positive"}
    assert set(answers.values_list("choice", flat=True)) <= {"left", "right"}


@pytest.mark.parametrize(
    "aggregation, keeps_first",
    [("unanimity", False), ("majority", True), ("dawid_skene", True)],
)
def test_the_runs_aggregation_decides_which_triples_three_verifiers_verify(
    paired_run, aggregation, keeps_first
):
    """Three verifiers; a HIT's first triple gets two positive votes and one "both", its
    second one positive vote and two "both". Unanimity keeps neither, majority and Dawid-Skene
    keep the first."""
    run = paired_run
    run.config = {**run.config, "verifiers": 3, "aggregation": aggregation}
    run.save(update_fields=["config"])
    selection_done_factory(run, workers=1)
    batch = batch_publish(
        batch=batch_create(
            run=run, stage=BisonStage.VERIFICATION, provider="local", items_per_hit=100
        )
    )
    assert batch.assignments_per_hit == 3  # the run's verifiers set the default
    # Each HIT's first triple gets two positive votes and one "both", its second one
    # positive and two "both" (a HIT's three workers, as the docstring says).
    # (A HIT's questions include traps, issue 47: its triples are taken in order.)
    triples: dict[int, list[int]] = {}
    for hit, item in (
        Question.objects.filter(hit__batch=batch, item__kind=BisonItemKind.TRIPLE)
        .order_by("position")
        .values_list("hit_id", "item_id")
    ):
        triples.setdefault(hit, []).append(item)
    firsts = {items[0] for items in triples.values()}
    seconds = {items[1] for items in triples.values() if len(items) > 1}
    assert firsts and seconds
    both_from = {**dict.fromkeys(firsts, {"v3"}), **dict.fromkeys(seconds, {"v2", "v3"})}

    verify_every_hit(
        batch,
        {
            name: lambda q, name=name: (
                "both" if name in both_from.get(q.item_id, ()) else positive_side(q)
            )
            for name in ("v1", "v2", "v3")
        },
    )
    verified = set(bison_verified_triples(run=run).values_list("pk", flat=True))
    all_triples = set(
        Item.objects.filter(run=run, kind=BisonItemKind.TRIPLE).values_list("pk", flat=True)
    )
    kept = firsts if keeps_first else set()
    assert verified == all_triples - firsts - seconds | kept
    tally = bison_tally(run=run)  # the counts' and the export's read: the same rule
    assert set(tally.pks[tally.verified].tolist()) == verified
    if verified:  # the export starts on the run's verified triples, whatever the rule
        assert bison_export_start(run=run).name == "bison.export"
    else:
        with pytest.raises(ServiceError, match="no verified triples"):
            bison_export_start(run=run)
    counts = bison_stage_counts(run=run)["stage3"]
    assert counts["verified"] == len(verified) and counts["aggregation"] == aggregation


def test_an_unknown_aggregation_is_refused(paired_run):
    from annotation.flows.bison.settings import BisonSettings
    from pipeline.errors import InputError

    with pytest.raises(InputError, match="unanimity, majority, dawid_skene"):
        BisonSettings.from_config({"aggregation": "vote"})


@pytest.mark.django_db(transaction=True)
def test_the_export_command_says_where_the_version_went(paired_run):
    """`bison_export` on the command line: the job's result names no server path (pages show
    it), so the command reads it from the Export row (it failed with KeyError 'path')."""
    from io import StringIO

    from django.core.management import call_command

    selection_done_factory(paired_run, workers=2, accuracy=1.0)
    batch = batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.VERIFICATION, provider="simulated", items_per_hit=2
        )
    )
    simulate_crowd(batch=batch, workers=6, profile=WorkerProfile(accuracy=1.0))
    out = StringIO()
    call_command("bison_export", paired_run.pk, stdout=out)
    export = Export.objects.get(run=paired_run)
    assert f"version {export.version} in {export.path}" in out.getvalue()


def test_stage_counts_workers_and_median_time_are_the_assignments(verification):
    """Each stage's distinct workers and median seconds per answer, as Python reads them from
    the counted assignments (times of many digits, so rounding is exercised)."""
    verify_every_hit(verification, {"v1": positive_side, "v2": positive_side})
    run = verification.run
    start = timezone.now()
    for n, assignment in enumerate(Assignment.objects.filter(hit__batch__run=run).order_by("pk")):
        assignment.accepted_at = start + timedelta(seconds=n)
        assignment.submitted_at = start + timedelta(seconds=n, microseconds=1 + n * 7_654_321)
        assignment.save(update_fields=["accepted_at", "submitted_at"])
    counts = bison_stage_counts(run=run)
    for key, stage in (("stage2", BisonStage.SELECTION), ("stage3", BisonStage.VERIFICATION)):
        done = Assignment.objects.filter(counted(), hit__batch__run=run, hit__batch__stage=stage)
        per_answer = [
            (a.submitted_at - a.accepted_at).total_seconds() / a.n
            for a in done.annotate(n=Count("answers"))
            if a.n and a.accepted_at and a.submitted_at
        ]
        assert counts[key]["workers"] == done.values("worker").distinct().count() > 0
        assert per_answer
        want = round(statistics.median(per_answer), 2)
        assert counts[key]["median_seconds_per_annotation"] == want
