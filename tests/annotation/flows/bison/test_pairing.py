import pytest

from annotation.errors import ServiceError
from annotation.flows.bison.services.pairing import pairing_block, pairing_start
from annotation.flows.bison.vocabulary import BisonItemKind
from annotation.models import Item, Job, JobState, Run, RunStatus
from annotation.services.runs.runs import run_create
from pipeline.errors import InputError
from pipeline.text import tokenize
from tests.factories import TOPICS, topic_vectors_file

pytestmark = pytest.mark.django_db


def pairs_of(run):
    return dict(
        Item.objects.filter(run=run, kind=BisonItemKind.IMAGE_PAIR).values_list(
            "positive__coco_id", "negative__coco_id"
        )
    )


def test_user_vectors_give_the_known_nearest_neighbours_in_blocks(dataset, run_on_commit, tmp_path):
    vec = topic_vectors_file(tmp_path / "topics.vec")
    run = run_create(dataset=dataset)
    job = run_on_commit(pairing_start, run=run, vectors_path=str(vec), block_size=2)
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED, job.error
    assert job.parts_total == 3 and job.parts_done == [0, 1, 2]
    assert job.progress == 100.0 and job.result["pairs"] == 6 and job.result["dimension"] == 12
    assert job.started_at is not None and job.finished_at >= job.started_at
    assert pairs_of(run) == {100: 101, 101: 100, 102: 103, 103: 102, 104: 105, 105: 104}
    sims = Item.objects.filter(run=run).values_list("similarity", flat=True)
    assert all(0.5 < s <= 1.0 for s in sims)
    run.refresh_from_db()
    assert run.status == RunStatus.PREPARED and run.embedding_dim == 12
    assert str(vec) in run.embedding_source

    # A retried block writes nothing twice and does not count twice.
    assert pairing_block(job_id=job.pk, part=1, start=2, stop=4) is False
    assert Item.objects.filter(run=run).count() == 6


def test_trained_vectors_are_seeded_and_recorded(dataset, run_on_commit):
    results = []
    for _ in range(2):
        run = run_create(dataset=dataset)
        run_on_commit(pairing_start, run=run, dim=16, epochs=10, seed=7)
        run.refresh_from_db()
        assert run.status == RunStatus.PREPARED
        assert "seed 7" in run.embedding_source
        results.append(pairs_of(run))
    assert results[0] == results[1] and len(results[0]) == 6
    assert all(p != n for p, n in results[0].items())


def test_dimension_differing_from_a_previous_run_is_refused(dataset, run_on_commit, tmp_path):
    first = run_create(dataset=dataset)
    run_on_commit(
        pairing_start, run=first, vectors_path=str(topic_vectors_file(tmp_path / "a.vec"))
    )
    second = run_create(dataset=dataset)
    other = topic_vectors_file(tmp_path / "b.vec", dim=20)
    with pytest.raises(InputError, match="dimension 20") as err:
        pairing_start(run=second, vectors_path=str(other))
    assert err.value.file == str(other)
    assert not Job.objects.filter(run=second).exists()
    with pytest.raises(InputError, match="dimension 16"):
        pairing_start(run=second, dim=16)
    run_on_commit(pairing_start, run=second, vectors_path=str(other), allow_new_dim=True)
    second.refresh_from_db()
    assert second.embedding_dim == 20


@pytest.mark.parametrize("content", [b"", b"hello world\n1 2 3\n", b'{"not": "vectors"}'])
def test_a_file_that_is_not_a_vec_is_refused_before_any_job(dataset, tmp_path, content):
    path = tmp_path / "bad.vec"
    path.write_bytes(content)
    run = run_create(dataset=dataset)
    with pytest.raises(InputError) as err:
        pairing_start(run=run, vectors_path=str(path))
    assert err.value.file == str(path)
    assert not Job.objects.exists()


def test_a_broken_bin_fails_the_job_with_the_file_named(dataset, run_on_commit, tmp_path):
    path = tmp_path / "broken.bin"
    path.write_bytes(b"\x00\x01garbage" * 10)
    run = run_create(dataset=dataset)
    job = run_on_commit(pairing_start, run=run, vectors_path=str(path))
    job.refresh_from_db()
    assert job.state == JobState.FAILED and str(path) in job.error
    assert Run.objects.get(pk=run.pk).status == RunStatus.FAILED
    assert not Item.objects.filter(run=run).exists()


def test_a_vec_with_bad_rows_fails_the_job_clearly(dataset, run_on_commit, tmp_path):
    path = tmp_path / "rows.vec"
    path.write_text("2 3\ndog 0.1 0.2 0.3\npizza 0.1 0.2\n")
    run = run_create(dataset=dataset)
    job = run_on_commit(pairing_start, run=run, vectors_path=str(path))
    job.refresh_from_db()
    assert job.state == JobState.FAILED and str(path) in job.error


def test_stage1_twice_on_a_run_is_refused(paired_run):
    with pytest.raises(ServiceError, match="paired"):
        pairing_start(run=paired_run)


def test_api_starts_the_job_and_reports_progress(
    dataset, admin_client, django_capture_on_commit_callbacks
):
    run = run_create(dataset=dataset)
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            f"/api/runs/{run.pk}/pairing/", {"dim": 8, "epochs": 5}, content_type="application/json"
        )
    assert response.status_code == 202, response.content
    job = admin_client.get(f"/api/jobs/{response.json()['id']}/").json()
    assert job["state"] == "succeeded" and job["progress"] == 100.0
    # Every image is a positive at least once, and each edge is stored in both orders.
    assert job["result"]["pairs"] >= 6 and job["result"]["pairs"] == 2 * job["result"]["edges"]


def test_default_stage1_on_the_sample_pairs_both_orders_in_a_sound_space(
    sample_path, run_on_commit, admin_client
):
    """The bundled 462 real COCO images with the default training: every nearest-neighbour
    edge is stored in both orders, and the space is not degenerate."""
    from annotation.services.datasets.datasets import dataset_import

    dataset = dataset_import(path=sample_path).dataset
    run = run_create(dataset=dataset)
    job = run_on_commit(pairing_start, run=run)
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED, job.error
    assert job.params["epochs"] == 50
    ordered = set(
        Item.objects.filter(run=run, kind=BisonItemKind.IMAGE_PAIR).values_list(
            "positive_id", "negative_id"
        )
    )
    assert ordered == {(b, a) for a, b in ordered}  # closed under reversal
    assert len(ordered) == job.result["pairs"] == 2 * job.result["edges"]
    assert job.result["edges"] > 462 / 2 and 0 < job.result["mutual_edges"] < job.result["edges"]
    per_positive: dict[int, int] = {}
    for positive, _ in ordered:
        per_positive[positive] = per_positive.get(positive, 0) + 1
    assert len(per_positive) == 462 and max(per_positive.values()) >= 3
    cosines = job.result["cosines"]
    assert not cosines["degenerate"] and "warning" not in job.result
    assert cosines["random_median"] < 0.9 < cosines["nn_median"]


def test_a_degenerate_space_is_flagged_on_the_job_and_the_dashboard(
    dataset, run_on_commit, tmp_path, admin_client
):
    # Every word is the same direction plus a tiny difference: every image pair at cosine ~1.
    words = sorted({w for _, caps in TOPICS for caption in caps for w in tokenize(caption)})
    rows = [
        w + " " + " ".join(f"{1.0 + (0.0001 if k == i % 8 else 0.0):.4f}" for k in range(8))
        for i, w in enumerate(words)
    ]
    vec = tmp_path / "flat.vec"
    vec.write_text(f"{len(rows)} 8\n" + "\n".join(rows) + "\n")
    run = run_create(dataset=dataset)
    job = run_on_commit(pairing_start, run=run, vectors_path=str(vec))
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED
    assert job.result["cosines"]["degenerate"] is True
    assert "degenerate vector space" in job.result["warning"] and "degenerate" in job.message
    page = admin_client.get("/").content.decode()
    assert "Warning: degenerate vector space" in page


def test_api_reads_vectors_only_from_the_import_folder(
    dataset, admin_client, settings, tmp_path, django_capture_on_commit_callbacks
):
    from tests.factories import topic_vectors_file

    folder = tmp_path / "import"
    folder.mkdir()
    settings.CROWDVL_IMPORT_DIR = folder
    outside = topic_vectors_file(tmp_path / "outside.vec")
    run = run_create(dataset=dataset)
    response = admin_client.post(
        f"/api/runs/{run.pk}/pairing/",
        {"vectors_path": str(outside)},
        content_type="application/json",
    )
    assert response.status_code == 400 and response.json()["field"] == "vectors_path"
    assert not run.jobs.exists()
    topic_vectors_file(folder / "topics.vec")
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            f"/api/runs/{run.pk}/pairing/",
            {"vectors_path": "topics.vec"},
            content_type="application/json",
        )
    assert response.status_code == 202, response.content
    job = admin_client.get(f"/api/jobs/{response.json()['id']}/").json()
    assert job["state"] == "succeeded"


def test_a_double_post_starts_stage_1_once(dataset, tmp_path):
    """Issue 46: two requests that read the run before either started its job (the second
    call's `run` is the stale copy) start one job; the second is refused."""
    vec = topic_vectors_file(tmp_path / "topics.vec")
    run = run_create(dataset=dataset)
    stale = Run.objects.get(pk=run.pk)
    pairing_start(run=run, vectors_path=str(vec))
    with pytest.raises(ServiceError, match="start stage 1"):
        pairing_start(run=stale, vectors_path=str(vec))
    assert Job.objects.filter(run=run).count() == 1
