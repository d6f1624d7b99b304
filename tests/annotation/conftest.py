import json

import pytest

from annotation.crowd.local import lean_path
from tests.factories import dataset_factory, paired_run_factory, placeholder_images


@pytest.fixture(scope="session", autouse=True)
def _require_postgres(django_db_blocker):
    import os

    from django.db import connection

    if connection.vendor != "postgresql" and not os.environ.get("CROWDVL_TESTS_ALLOW_SQLITE"):
        pytest.exit(
            "The tests run against PostgreSQL and Redis: use `make test` (it sets DATABASE_URL "
            "and CELERY_BROKER_URL), or set them yourself.",
            returncode=2,
        )


@pytest.fixture(scope="session", autouse=True)
def _fast_password_hashing():
    """Passwords hashed with MD5 in tests, as Django's testing docs suggest: the production
    hasher's PBKDF2 rounds cost about a third of a second per account made or signed in.
    Processes the tests start (servers, drivers) keep the production hasher."""
    from django.test import override_settings

    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture(scope="session", autouse=True)
def _celery_in_process():
    """Most tests run tasks in-process; test_celery_worker.py uses a real worker."""
    from config import celery_app

    celery_app.conf.task_always_eager = True
    celery_app.conf.task_eager_propagates = True


@pytest.fixture(autouse=True)
def _image_dirs(settings, tmp_path):
    """Tests keep their local_dir images under tmp_path: allow it as an image folder (here,
    not in tests/conftest.py, so that pipeline tests never touch Django's settings)."""
    settings.CROWDVL_IMAGE_DIRS = [tmp_path]


@pytest.fixture(autouse=True)
def _media_root(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Rate-limit counters and cached HIT views must not leak from one test into the next."""
    from django.core.cache import caches

    for alias in ("default", "local", "shells", "assignments"):
        caches[alias].clear()


@pytest.fixture
def one_rate_window(monkeypatch):
    """Rate limits count in fixed one-minute windows: a test that spends a limit and expects
    the next request refused must not see the minute turn between the two (a flake on a
    loaded machine), so the limiter's clock stands still for the test."""
    from types import SimpleNamespace

    import annotation.ratelimit

    still = annotation.ratelimit.time.time()
    monkeypatch.setattr(annotation.ratelimit, "time", SimpleNamespace(time=lambda: still))


@pytest.fixture
def run_on_commit(django_capture_on_commit_callbacks):
    """Run on_commit callbacks (task enqueues) inside a test's transaction."""

    def wrap(fn, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return fn(*args, **kwargs)

    return wrap


@pytest.fixture
def image_dir(tmp_path):
    return placeholder_images(tmp_path / "images")


@pytest.fixture
def dataset(db, tmp_path, image_dir):
    return dataset_factory(tmp_path, image_dir=image_dir)


@pytest.fixture
def paired_run(dataset, run_on_commit):
    return paired_run_factory(dataset, run_on_commit=run_on_commit)


@pytest.fixture
def eccv_run(dataset):
    """A small ECCV run with the paper's gold (an original pair and a random pair in every
    HIT), which the review, workers and export tests lean on; the default, gold copied from
    the run's own established pairs, is tested in test_gold.py and test_gold_attacks.py."""
    from annotation.flows.eccv.services.runs import eccv_run_create

    return eccv_run_create(
        dataset=dataset,
        config={
            "image_queries": 3,
            "caption_queries": 4,
            "k": 2,
            "models": 2,
            "seed": 1,
            "gold_source": "paper",
        },
    )


def rankings_file(tmp_path, run, *, reverse=False):
    images = sorted(run.dataset.images.values_list("coco_id", flat=True))
    owner = dict(run.dataset.captions.values_list("coco_id", "image__coco_id"))
    captions = sorted(owner)
    order = (lambda xs: list(reversed(xs))) if reverse else list

    def own_first(items, own):
        # A model that finds a query's original pairs first, then lists the rest in order.
        return sorted(order(items), key=lambda x: not own(x))

    data = {
        "i2t": {
            str(i): own_first(captions, lambda c, i=i: owner[c] == i)
            for i in run.config["query_images"]
        },
        "t2i": {
            str(c): own_first(images, lambda i, c=c: owner[c] == i)
            for c in run.config["query_captions"]
        },
    }
    path = tmp_path / f"ranked{'-rev' if reverse else ''}.json"
    path.write_text(json.dumps(data))
    return str(path)


@pytest.fixture
def proposed(eccv_run, tmp_path, run_on_commit):
    from annotation.flows.eccv.services.annotators import eccv_annotator_add
    from annotation.flows.eccv.services.proposal_job import eccv_propose_start

    eccv_annotator_add(
        run=eccv_run, name="fasttext", kind="fasttext", params={"dim": 16, "epochs": 5}
    )
    eccv_annotator_add(
        run=eccv_run, name="listed", kind="rankings", source=rankings_file(tmp_path, eccv_run)
    )
    job = run_on_commit(eccv_propose_start, run=eccv_run)
    job.refresh_from_db()
    assert job.state == "succeeded", job.error
    eccv_run.refresh_from_db()
    return eccv_run


@pytest.fixture
def lean_answers(monkeypatch):
    """The answers the lean path gave (None: it left the request to the full way)."""
    answers = []
    plain = lean_path.work_assignment_plain

    def spy(request, assignment_id):
        answers.append(plain(request, assignment_id))
        return answers[-1]

    monkeypatch.setattr(lean_path, "work_assignment_plain", spy)
    return answers


@pytest.fixture
def pro(client, settings):
    """Prolific through the stand-in of its API (`annotation/crowd/prolific/testing.py`)."""
    from tests.annotation.crowd.prolific.player import ProlificDriver

    settings.CROWDVL_PUBLIC_URL = "https://crowd.example.org"
    driver = ProlificDriver(client)
    yield driver
    driver.done()


@pytest.fixture
def two_projects(django_user_model):
    """Projects for the wall tests. Alice: researcher in Alpha; Vic: viewer in Alpha and
    researcher in Gamma; Beta: no one's."""
    from annotation.models import Project, ProjectMembership, ProjectRole

    alpha, beta, gamma = (Project.objects.create(name=n) for n in ("Alpha", "Beta", "Gamma"))
    alice = django_user_model.objects.create_user("alice")
    vic = django_user_model.objects.create_user("vic")
    ProjectMembership.objects.create(project=alpha, user=alice, role=ProjectRole.RESEARCHER)
    ProjectMembership.objects.create(project=alpha, user=vic, role=ProjectRole.VIEWER)
    ProjectMembership.objects.create(project=gamma, user=vic, role=ProjectRole.RESEARCHER)
    return {"alpha": alpha, "beta": beta, "gamma": gamma, "alice": alice, "vic": vic}
