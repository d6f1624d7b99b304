"""Issue 26: the flows' tables moved out of the core's state (migration 0024, eccv and quality
0001: `SeparateDatabaseAndState`, no table copy) and the run statuses were renamed to
flow-neutral words (0023). Built from the schema as of annotation 0022 with a row in every
moved table, migrated forward, every row is still there with its values; migrated back, the
old statuses return."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.long

BEFORE = [("annotation", "0022_hit_images"), ("eccv", None), ("quality", None)]

# kind, status as of 0022 -> status after 0023
RUNS = [
    ("bison", "paired", "prepared"),
    ("bison", "selecting", "collecting"),
    ("bison", "selected", "collected"),
    ("bison", "verifying", "collecting_2"),
    ("bison", "verified", "collected_2"),
    ("eccv", "pairing", "preparing"),
    ("eccv", "verifying", "collecting"),
    ("cxc", "verified", "collected"),
    ("caption_quality", "verifying", "collecting"),
    ("caption_quality", "exported", "exported"),
]


def _migrate(targets):  # type: ignore[no-untyped-def]
    executor = MigrationExecutor(connection)
    if targets is None:
        targets = executor.loader.graph.leaf_nodes()
    executor.migrate(targets)
    state = [(app, name) for app, name in targets if name is not None]  # (app, None): unapplied
    return MigrationExecutor(connection).loader.project_state(state).apps


def _old_rows(old):  # type: ignore[no-untyped-def]
    """One row in every table that moves, and a run of each status that is renamed."""
    model = old.get_model
    dataset = model("annotation", "Dataset").objects.create(
        name="old", source_file="x.json", checksum="0" * 64, image_source="coco_url"
    )
    project = model("annotation", "Project").objects.create(name="Default")
    image = model("annotation", "Image").objects.create(
        dataset=dataset, coco_id=7, file_name="a.jpg"
    )
    caption = model("annotation", "Caption").objects.create(
        dataset=dataset, image=image, coco_id=70, text="a dog"
    )
    Run = model("annotation", "Run")
    runs = {
        (kind, old_status): Run.objects.create(
            dataset=dataset, project=project, kind=kind, status=old_status
        ).pk
        for kind, old_status, _ in RUNS
    }
    bison = Run.objects.get(pk=runs[("bison", "verifying")])
    model("annotation", "Event").objects.create(
        action="run.status", run=bison, data={"from": "selected", "to": "verifying", "batch": 3}
    )
    eccv = Run.objects.get(pk=runs[("eccv", "verifying")])
    quality = Run.objects.get(pk=runs[("caption_quality", "verifying")])
    Candidate = model("annotation", "Candidate")
    one = Candidate.objects.create(
        run=quality, image=image, source="reference", text="a dog", reference=caption
    )
    two = Candidate.objects.create(run=quality, image=image, source="model-x", text="a cat")
    pair = model("annotation", "Item").objects.create(
        run=quality, kind="candidate_pair", positive=image, candidate=one, candidate2=two
    )
    candidate_item = model("annotation", "Item").objects.create(
        run=eccv, kind="candidate", positive=image, caption=caption, similarity=0.5
    )
    annotator = model("annotation", "Annotator").objects.create(
        run=eccv, name="vse", kind="embeddings", source="vse.npz", params={"dim": 64}
    )
    model("annotation", "Proposal").objects.create(
        item=candidate_item, annotator=annotator, direction="i2t", rank=3
    )
    model("annotation", "ExternalPositive").objects.create(
        run=eccv, source="cxc", image=image, caption=caption, score=4.5
    )
    return runs, {
        "one": one.pk,
        "two": two.pk,
        "pair": pair.pk,
        "item": candidate_item.pk,
        "annotator": annotator.pk,
        "eccv": eccv.pk,
        "quality": quality.pk,
        "image": image.pk,
        "caption": caption.pk,
    }


@pytest.mark.django_db(transaction=True)
def test_moved_tables_keep_every_row_and_statuses_are_renamed_both_ways():
    try:
        runs, ids = _old_rows(_migrate(BEFORE))
        new = _migrate(None)

        Run = new.get_model("annotation", "Run")
        assert {
            (kind, old_status): Run.objects.get(pk=pk).status
            for (kind, old_status), pk in runs.items()
        } == {(kind, old_status): status for kind, old_status, status in RUNS}
        event = new.get_model("annotation", "Event").objects.get(action="run.status")
        assert event.data == {"from": "collected", "to": "collecting_2", "batch": 3}

        Candidate = new.get_model("quality", "Candidate")
        assert Candidate._meta.db_table == "annotation_candidate"
        assert sorted(
            Candidate.objects.values_list(
                "pk", "run_id", "image_id", "source", "text", "reference_id"
            )
        ) == sorted(
            [
                (ids["one"], ids["quality"], ids["image"], "reference", "a dog", ids["caption"]),
                (ids["two"], ids["quality"], ids["image"], "model-x", "a cat", None),
            ]
        )
        pair = new.get_model("annotation", "Item").objects.get(pk=ids["pair"])
        assert (pair.candidate.text, pair.candidate2.text) == ("a dog", "a cat")
        annotator = new.get_model("eccv", "Annotator").objects.get()
        assert (annotator.pk, annotator.run_id, annotator.name, annotator.kind) == (
            ids["annotator"],
            ids["eccv"],
            "vse",
            "embeddings",
        )
        assert (annotator.source, annotator.params) == ("vse.npz", {"dim": 64})
        proposal = new.get_model("eccv", "Proposal").objects.get()
        assert (proposal.item_id, proposal.annotator_id, proposal.direction, proposal.rank) == (
            ids["item"],
            ids["annotator"],
            "i2t",
            3,
        )
        positive = new.get_model("eccv", "ExternalPositive").objects.get()
        assert (positive.run_id, positive.source, positive.image_id, positive.caption_id) == (
            ids["eccv"],
            "cxc",
            ids["image"],
            ids["caption"],
        )
        assert positive.score == 4.5
        with connection.cursor() as cursor:  # the same tables: nothing was copied or renamed
            tables = set(connection.introspection.table_names(cursor))
        assert {
            "annotation_candidate",
            "annotation_annotator",
            "annotation_proposal",
            "annotation_externalpositive",
        } <= tables
        assert not any(t.startswith(("eccv_", "quality_")) for t in tables)

        old = _migrate(BEFORE)  # and back: the old words, the rows in the core's state
        Run = old.get_model("annotation", "Run")
        assert {
            (kind, old_status): Run.objects.get(pk=pk).status
            for (kind, old_status), pk in runs.items()
        } == {(kind, old_status): old_status for kind, old_status, _ in RUNS}
        event = old.get_model("annotation", "Event").objects.get(action="run.status")
        assert event.data == {"from": "selected", "to": "verifying", "batch": 3}
        assert old.get_model("annotation", "Candidate").objects.count() == 2
        assert old.get_model("annotation", "Proposal").objects.get().rank == 3
        assert old.get_model("annotation", "ExternalPositive").objects.count() == 1
    finally:
        _migrate(None)
