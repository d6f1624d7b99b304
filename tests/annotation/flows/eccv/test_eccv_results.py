"""ECCV post-processing, export, evaluation, analyses and the review queue."""

import json
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.errors import ServiceError
from annotation.flows.eccv.models import ExternalPositive
from annotation.flows.eccv.services.cxc_positives import eccv_cxc_import
from annotation.flows.eccv.services.export import eccv_evaluate, eccv_export_start
from annotation.flows.eccv.services.report import eccv_report
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.models import Assignment, AssignmentState, Caption, Export, HitStatus, Item, Review
from annotation.selectors.work.invitations import run_consent
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.reviews import assignments_auto_approve, review_decide
from pipeline.errors import InputError
from pipeline.simulate import WorkerProfile
from tests.annotation.api.test_schema import check, schema  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def judged(proposed):
    batch = batch_publish(
        batch=batch_create(
            run=proposed, stage=EccvStage.JUDGMENT, provider="simulated", items_per_hit=6
        )
    )
    simulate_crowd(batch=batch, workers=2, profile=WorkerProfile(accuracy=1.0, gold_accuracy=1.0))
    # A reviewer approves whatever was held, as before an export.
    for review in Review.objects.filter(assignment__hit__batch=batch, status="open"):
        review_decide(review=review, approve=True)
    return proposed


def export_of(run, run_on_commit):
    job = run_on_commit(eccv_export_start, run=run)
    job.refresh_from_db()
    assert job.state == "succeeded", job.error
    return Export.objects.get(pk=job.result["export"])


def test_export_files_and_manifest(judged, run_on_commit):
    export = export_of(judged, run_on_commit)
    folder = Path(export.path)
    i2t = json.loads((folder / "eccv_image_to_caption.json").read_text())
    t2i = json.loads((folder / "eccv_caption_to_image.json").read_text())
    assert set(i2t) <= {str(q) for q in judged.config["query_images"]}
    assert all(isinstance(v, list) and v for v in i2t.values())
    lines = [
        json.loads(line) for line in (folder / "eccv_judged_pairs.jsonl").read_text().splitlines()
    ]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["consent"]["version"] == run_consent(judged)["version"]
    counts = manifest["counts"]
    assert (
        counts["pairs_proposed"] == 28
        and counts["pairs_judged"] == len(lines) == counts["pairs_after_merging_duplicates"]
    )
    assert all(line["proposals"] and line["answers"] for line in lines)
    positives = {(line["image_id"], line["caption_id"]) for line in lines if line["positive"]}
    originals = set(
        Caption.objects.filter(dataset=judged.dataset).values_list("image__coco_id", "coco_id")
    )
    # Every exported link is a verified candidate or an original COCO pair (source "coco").
    for image, captions in i2t.items():
        assert all((int(image), c) in positives | originals for c in captions)
    assert counts["coco_links"] > 0 and counts["human_links"] == len(positives)
    assert set(t2i) <= {str(q) for q in judged.config["query_captions"]}
    shares = manifest["answer_share_percent_by_model_and_rank"]
    assert set(shares) == {"fasttext", "listed"}
    for ranks in shares.values():
        for share in ranks.values():
            assert abs(sum(share.values()) - 100) < 0.05
    assert set(manifest["files"]) == {
        "eccv_image_to_caption.json",
        "eccv_caption_to_image.json",
        "eccv_judged_pairs.jsonl",
    }


def test_exclusions_and_cxc_merge(judged, run_on_commit, tmp_path):
    query_image = judged.config["query_images"][0]
    caption = (
        judged.dataset.captions.exclude(image__coco_id=query_image).order_by("coco_id").first()
    )
    csv = tmp_path / "sits.csv"
    csv.write_text(
        "caption,image,agg_score,sampling_method\n"
        f"COCO_val2014:sentid:{caption.coco_id},COCO_val2014_{query_image:012d}.jpg,4.2,c2i_intrasim\n"
        f"COCO_val2014:sentid:{caption.coco_id},COCO_val2014_{judged.config['query_images'][1]:012d}.jpg,1.0,c2i_intrasim\n"
    )
    assert eccv_cxc_import(run=judged, path=str(csv)) == 1
    assert eccv_cxc_import(run=judged, path=str(csv)) == 0  # counts rows actually written
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "caption,image,agg_score,sampling_method\nCOCO_val2014:sentid:1,COCO_val2014_000000000001.jpg,7,x\n"
    )
    with pytest.raises(InputError) as err:
        eccv_cxc_import(run=judged, path=str(bad))
    assert err.value.file == str(bad) and err.value.record == 2
    assert ExternalPositive.objects.count() == 1
    export = export_of(judged, run_on_commit)
    i2t = json.loads((Path(export.path) / "eccv_image_to_caption.json").read_text())
    assert caption.coco_id in i2t[str(query_image)]

    excl = tmp_path / "excl.json"
    excl.write_text(json.dumps({"caption_ids": [caption.coco_id], "image_ids": []}))
    judged.config["exclusions"] = str(excl)
    judged.save(update_fields=["config"])
    export2 = export_of(judged, run_on_commit)
    i2t = json.loads((Path(export2.path) / "eccv_image_to_caption.json").read_text())
    assert caption.coco_id not in i2t.get(str(query_image), [])
    assert export2.version == export.version + 1


def test_evaluation_of_rankings_on_the_export(
    judged,
    run_on_commit,
    tmp_path,
    capsys,
    admin_client,
    schema,  # noqa: F811
):
    export = export_of(judged, run_on_commit)
    folder = Path(export.path)
    i2t = {
        int(k): v
        for k, v in json.loads((folder / "eccv_image_to_caption.json").read_text()).items()
    }
    t2i = {
        int(k): v
        for k, v in json.loads((folder / "eccv_caption_to_image.json").read_text()).items()
    }
    images = sorted(judged.dataset.images.values_list("coco_id", flat=True))
    captions = sorted(judged.dataset.captions.values_list("coco_id", flat=True))
    perfect = {
        "i2t": {str(q): v + [c for c in captions if c not in v] for q, v in i2t.items()},
        "t2i": {str(q): v + [i for i in images if i not in v] for q, v in t2i.items()},
    }
    path = tmp_path / "perfect.json"
    path.write_text(json.dumps(perfect))
    scores = eccv_evaluate(export=export, rankings_path=str(path), ks=(1, 5))
    assert scores["i2t"]["mAP@R"] == 100.0 and scores["t2i"]["R@1"] == 100.0
    worst = {
        "i2t": {str(q): [c for c in captions if c not in v] + v for q, v in i2t.items()},
        "t2i": {str(q): [i for i in images if i not in v] + v for q, v in t2i.items()},
    }
    path.write_text(json.dumps(worst))
    scores = eccv_evaluate(export=export, rankings_path=str(path), ks=(1, 5))
    assert scores["i2t"]["R@1"] == 0.0
    call_command("eccv_evaluate", str(export.pk), "--rankings", str(path), "--ks", "1,5")
    assert "i2t: mAP@R" in capsys.readouterr().out
    response = admin_client.post(
        "/api/eccv/evaluate/",
        {"export": export.pk, "rankings": perfect, "ks": [1, 5]},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    check(schema, "/api/eccv/evaluate/", "post", response)
    assert response.json()["i2t"]["mAP@R"] == 100.0
    short = {"i2t": {str(q): v[:1] for q, v in i2t.items()}, "t2i": perfect["t2i"]}
    path.write_text(json.dumps(short))
    with pytest.raises(InputError, match="ranking"):
        eccv_evaluate(export=export, rankings_path=str(path), ks=(1, 5))
    response = admin_client.post(
        "/api/eccv/evaluate/",
        {"export": export.pk, "rankings": short, "ks": [1, 5]},
        content_type="application/json",
    )
    assert response.status_code == 400 and response.json()["field"] == "ranking"


def test_report_has_precision_recall_tau_and_bias(judged):
    report = eccv_report(run=judged)
    coco = report["benchmark_precision_recall"]["coco"]["i2t"]
    assert coco["precision"] is None or 0 <= coco["precision"] <= 100
    assert list(report["kendall_tau_b"]) == ["fasttext vs listed"]
    bias = report["model_bias"]["i2t"]
    assert bias["models"] == ["fasttext", "listed"]
    assert len(bias["subsets"]) == 3  # {fasttext}, {listed}, both
    both = next(s for s in bias["subsets"] if len(s["subset"]) == 2)
    assert both["B_recall_at_1"] == 0.0  # Theta = All has no bias by definition


def test_review_queue_pages_and_decisions(proposed, admin_client, client):
    batch = batch_publish(
        batch=batch_create(
            run=proposed, stage=EccvStage.JUDGMENT, provider="simulated", items_per_hit=6
        )
    )
    simulate_crowd(
        batch=batch, workers=2, profile=WorkerProfile(accuracy=1.0, gold_accuracy=0.0), seed=3
    )
    reviews = list(Review.objects.order_by("pk"))
    assert reviews, "gold accuracy 0 must send HITs to review"
    assert client.get("/review/").status_code == 302  # staff only
    page = admin_client.get("/review/").content.decode()
    assert f"/review/{reviews[0].pk}/" in page
    detail = admin_client.get(f"/review/{reviews[0].pk}/").content.decode()
    assert '<strong class="failed-gold">FAILED</strong> gold: the answer is' in detail
    response = admin_client.post(
        f"/review/{reviews[0].pk}/", {"decision": "reject", "feedback": ""}
    )
    assert response.status_code == 400 and "feedback" in response.content.decode()
    response = admin_client.post(
        f"/review/{reviews[0].pk}/", {"decision": "reject", "feedback": "Gold items wrong."}
    )
    assert response.status_code == 302
    rejected = Review.objects.get(pk=reviews[0].pk)
    assert rejected.status == "rejected" and rejected.assignment.state == AssignmentState.REJECTED
    assert rejected.assignment.hit.status == HitStatus.OPEN  # its pairs go back to be judged
    if len(reviews) > 1:
        review_decide(review=reviews[1], approve=True)
        assert Assignment.objects.get(pk=reviews[1].assignment_id).state == AssignmentState.APPROVED
    with pytest.raises(ServiceError, match="already decided"):
        review_decide(review=Review.objects.get(pk=reviews[0].pk), approve=True)


def test_unreviewed_work_is_approved_after_the_delay(proposed):
    batch = batch_publish(
        batch=batch_create(
            run=proposed, stage=EccvStage.JUDGMENT, provider="simulated", items_per_hit=6
        )
    )
    simulate_crowd(
        batch=batch, workers=1, profile=WorkerProfile(accuracy=1.0, gold_accuracy=0.0), seed=1
    )
    held = set(Review.objects.values_list("assignment_id", flat=True))
    assert assignments_auto_approve() == 0  # the delay (3 days) has not passed
    later = timezone.now() + timedelta(days=30)
    approved = assignments_auto_approve(now=later)
    assert approved == Assignment.objects.filter(state=AssignmentState.APPROVED).count()
    assert not Assignment.objects.filter(pk__in=held, state=AssignmentState.APPROVED).exists()


def test_model_agreement_table_and_command(proposed):
    from django.core.management import call_command

    from annotation.flows.eccv.services.report import eccv_model_agreement

    table = eccv_model_agreement(run=proposed)
    for direction in ("i2t", "t2i"):
        fasttext_row = table[direction]["fasttext"]["listed"]
        listed_row = table[direction]["listed"]["fasttext"]
        # The FastText annotator has vectors: exact full-gallery ranks of the list's items.
        assert listed_row["exact"] is True and not fasttext_row["exact"]
        assert listed_row["tau"] is not None and -1 <= listed_row["tau"] <= 1
        assert listed_row["mean_rank_of_top1"] >= 1
    out = StringIO()
    call_command("eccv_model_agreement", str(proposed.pk), stdout=out)
    text = out.getvalue()
    assert "i2t: Kendall tau-b" in text and "t2i: average rank" in text and "fasttext" in text


def test_export_waits_for_open_reviews_or_lists_the_work_it_leaves_out(proposed, run_on_commit):
    batch = batch_publish(
        batch=batch_create(
            run=proposed, stage=EccvStage.JUDGMENT, provider="simulated", items_per_hit=6
        )
    )
    # Workers who get every gold item wrong: each submission is held for review.
    simulate_crowd(batch=batch, workers=2, profile=WorkerProfile(accuracy=1.0, gold_accuracy=0.0))
    held = Review.objects.filter(assignment__hit__batch=batch, status="open")
    assert held.count() >= 2
    review_decide(review=held.order_by("pk").first(), approve=True)  # some work counts
    assert held.exists()
    with pytest.raises(ServiceError, match="waiting for review"):
        eccv_export_start(run=proposed)
    job = run_on_commit(eccv_export_start, run=proposed, allow_open_reviews=True)
    job.refresh_from_db()
    assert job.state == "succeeded", job.error
    folder = Path(Export.objects.get(pk=job.result["export"]).path)
    manifest = json.loads((folder / "manifest.json").read_text())
    listed = {row["assignment"] for row in manifest["excluded_open_reviews"]}
    assert listed == set(held.values_list("assignment_id", flat=True))
    # The datasheet lists them as a table of their own, in words, not as JSON.
    sheet = (folder / "DATASHEET.md").read_text()
    lead = "- Exclusions: submissions still held for review when exported, left out"
    assert f"{lead} ({len(listed)}; manifest.json: excluded_open_reviews):" in sheet
    lines = sheet.splitlines()
    start = lines.index("| assignment | hit | reasons |") + 2
    rows = lines[start : start + len(listed) + 1]
    assert {int(row.split(" | ")[0].strip("| ")) for row in rows[:-1]} == listed
    assert rows[-1] == ""  # the table ends there


def test_exports_name_workers_by_a_keyed_pseudonym_only(judged, run_on_commit):
    export = export_of(judged, run_on_commit)
    text = (Path(export.path) / "eccv_judged_pairs.jsonl").read_text()
    raw_ids = set(
        Assignment.objects.filter(hit__batch__run=judged).values_list(
            "worker__external_id", flat=True
        )
    )
    assert raw_ids and not any(raw in text for raw in raw_ids)
    workers = {a["worker"] for line in text.splitlines() for a in json.loads(line)["answers"]}
    assert len(workers) == len(raw_ids) and all(w.startswith("w-") for w in workers)


def test_dawid_skene_aggregation_is_selectable_and_agrees_with_careful_workers(judged):
    from annotation.flows.eccv.selectors import eccv_human_positives, eccv_positives

    majority = set(eccv_human_positives(run=judged))
    judged.config["aggregation"] = "dawid_skene"
    judged.save()
    ds = set(eccv_human_positives(run=judged))
    judged.config["aggregation"] = "weighted_majority"
    judged.save()
    weighted = set(eccv_human_positives(run=judged))
    # Perfect simulated workers: every reading gives the same positives.
    assert ds == majority == weighted and ds
    positives = eccv_positives(run=judged)
    assert sum(len(v) for v in positives["i2t"].values()) > 0


def test_an_unknown_aggregation_is_refused(dataset):
    from annotation.flows.eccv.services.runs import eccv_run_create

    with pytest.raises(InputError) as caught:
        eccv_run_create(
            dataset=dataset,
            config={
                "image_queries": 2,
                "caption_queries": 2,
                "k": 2,
                "models": 1,
                "aggregation": "vote",
            },
        )
    assert caught.value.field == "aggregation"


def test_weighted_majority_follows_the_worker_who_gets_gold_right(proposed):
    """Two judgments per pair (the run's `judgments_per_pair`): a careful worker and a
    spammer who answers every pair, gold included, the other way round. Plain majority
    counts the tie as positive; weighted by gold accuracy, the careful worker decides."""
    from annotation.flows.eccv.selectors import eccv_positive_item_ids
    from tests.annotation.flows.bison.test_agreement_and_export import answer_all

    proposed.config = {**proposed.config, "judgments_per_pair": 2}
    proposed.save(update_fields=["config"])
    batch = batch_publish(
        batch=batch_create(
            run=proposed, stage=EccvStage.JUDGMENT, provider="local", items_per_hit=100
        )
    )
    assert batch.assignments_per_hit == 2
    truth = {}

    def careful(q):
        gold = {"gold_positive": "yes", "gold_negative": "no"}
        answer = gold.get(q.item.kind) or ("no" if q.position % 2 else "yes")
        truth[q.item_id] = answer
        return json.dumps({"answer": answer, "reasons": [], "errors": []})

    def contrary(q):
        answer = "yes" if truth[q.item_id] == "no" else "no"
        return json.dumps({"answer": answer, "reasons": [], "errors": []})

    for name, pick in (("careful", careful), ("contrary", contrary)):
        for _ in range(batch.hits.count()):  # every HIT, one at a time
            answer_all(batch, name, pick)
    for review in Review.objects.filter(assignment__hit__batch=batch, status="open"):
        review_decide(review=review, approve=True)
    kinds = dict(Item.objects.filter(pk__in=truth).values_list("pk", "kind"))
    candidates = {i for i in truth if kinds[i] == "candidate"}
    majority = eccv_positive_item_ids(run=proposed)
    assert majority == candidates  # every pair is a 1-1 tie
    proposed.config["aggregation"] = "weighted_majority"
    proposed.save()
    weighted = eccv_positive_item_ids(run=proposed)
    assert weighted == {i for i in candidates if truth[i] == "yes"} and weighted
