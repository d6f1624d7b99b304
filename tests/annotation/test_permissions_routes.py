"""The project wall, walked from the URL resolver (issue 47): every route that takes an object id
is requested by a signed-in researcher of ANOTHER project (GET, and each method the view
defines), who must get 403/404 (never a 2xx, a redirect or a 500), and no row may change.

Routes are classified from their URL kwargs: an id kwarg the walker cannot fill, or another
kwarg it does not know for that route, fails the test, so a new route must be added here (or to
EXEMPT with a reason) before it ships. The owner project's researcher requests the same GETs as
a control: the ids are real, so a 404 to the attacker is the wall, not a wrong id."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from django.apps import apps
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from annotation.encoders.models import EmbeddingSet, EmbeddingState
from annotation.models import (
    Assignment,
    Batch,
    Export,
    Hit,
    ProjectMembership,
    ProjectRole,
    Worker,
)
from annotation.selectors.installation import installation_id
from tests.annotation.test_permissions import world  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db

# Routes with an id that the walker does not request, each with why.
EXEMPT = {
    # Worker-facing pages: a worker holds the batch or assignment through a signed session,
    # an invitation token or a platform's confirmed identity, never a project role.
    "work-start": "worker page: entered through an invitation's signed token",
    "work-next": "worker page: the worker's signed session",
    "work-assignment": "worker page: only the assignment's holder (signed session)",
    "work-assignment-draft": "worker page: only the assignment's holder (signed session)",
    "mturk-task": "worker page: MTurk's confirmed worker and assignment ids",
    "prolific-start": "worker page: Prolific's confirmed participant (signed URL parameters)",
    "prolific-task": "worker page: only the assignment's holder",
    "prolific-task-draft": "worker page: only the assignment's holder",
    "panel-entry": "worker page: the panel's signed entry link",
    "panel-next": "worker page: the panel participant's signed session",
    "panel-finish": "worker page: the panel participant's signed session",
    "panel-task": "worker page: only the assignment's holder",
    "panel-task-draft": "worker page: only the assignment's holder",
    "dataset-import-job": "a dataset import's job: datasets are shared, no project's object",
}
# Django's admin and its object pages: staff only (a researcher is sent to the admin sign-in).
EXEMPT_PREFIXES = {"admin/": "Django's admin: staff only, walked by Django's own checks"}
# Datasets are shared across projects (issue 13): their routes answer every member, and must
# not show another project's embedding sets (checked in the shared-route test below); an image
# is its dataset's (a member sees the images of datasets their projects' runs use).
SHARED = {"dataset_id", "image_id"}

# Other kwargs, filled per route name (a value that exists, so a refusal is the wall's).
FILLERS: dict[str, dict[str, Any]] = {
    "api-run-input": {"name": "encoder"},
    "run-input": {"name": "encoder"},
    "api-run-job-start": {"name": "propose"},
    "run-job-start": {"name": "propose"},
    "api-export-file": {"name": "manifest.json"},
    "api-export-file-path": {"name": "files/manifest.json"},
    "export-file": {"name": "manifest.json"},
    "export-file-path": {"name": "files/manifest.json"},
    "api-batch-preview": {"number": 1},
    "batch-preview-task": {"number": 1},
    "batch-launch-action": {"action": "publish"},
    "run-worker-action": {"action": "block"},
    # A provider's batch pages: a batch of that provider ("@key": another id of the world).
    "prolific-pay": {"batch_id": "@prolific_batch"},
    "prolific-test": {"batch_id": "@prolific_batch"},
    "prolific-test-task": {"batch_id": "@prolific_batch"},
    "api-prolific-pay": {"batch_id": "@prolific_batch"},
    "panel-batch": {"batch_id": "@panel_batch"},
    "panel-batch-settings": {"batch_id": "@panel_batch"},
    "panel-batch-confirm": {"batch_id": "@panel_batch"},
    "panel-batch-bonuses": {"batch_id": "@panel_batch"},
    "api-panel-batch": {"batch_id": "@panel_batch"},
    "api-panel-confirm": {"batch_id": "@panel_batch"},
    "api-panel-bonuses": {"batch_id": "@panel_batch"},
}
METHODS = ("get", "post", "put", "patch", "delete")


def routes(patterns, prefix=""):
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from routes(p.url_patterns, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern), p


def id_kwargs(pattern: URLPattern) -> list[str]:
    """The URL's kwargs that name a stored object: `<…_id>`."""
    return [k for k in pattern.pattern.converters if k.endswith("_id")]


def methods_of(pattern: URLPattern) -> list[str]:
    """The methods the view defines (an API view's handlers); GET and POST for a page."""
    view = getattr(pattern.callback, "view_class", None) or getattr(pattern.callback, "cls", None)
    if view is None:
        return ["get", "post"]
    return [m for m in METHODS if hasattr(view, m)]


def walked(ids: dict[str, int]) -> tuple[list[tuple[str, str, str]], list[str]]:
    """(route, name, url) of each route to request, and the routes the walker cannot fill."""
    out, unclassified = [], []
    for route, pattern in routes(get_resolver().url_patterns):
        wanted = id_kwargs(pattern)
        if not wanted or route.startswith(tuple(EXEMPT_PREFIXES)) or pattern.name in EXEMPT:
            continue
        if set(wanted) <= SHARED:  # only shared objects: walked by the shared-route test
            continue
        kwargs: dict[str, Any] = {}
        missing = [k for k in wanted if k not in ids]
        fill = FILLERS.get(pattern.name or "", {})
        missing += [k for k in pattern.pattern.converters if k not in wanted and k not in fill]
        if missing:
            unclassified.append(f"{route} ({pattern.name}): cannot fill {', '.join(missing)}")
            continue
        kwargs = {**{k: ids[k] for k in wanted}, **fill}
        kwargs = {
            k: ids[v[1:]] if isinstance(v, str) and v.startswith("@") else v
            for k, v in kwargs.items()
        }
        url = "/" + route
        for key, value in kwargs.items():
            converter = pattern.pattern.converters[key]
            kind = {"IntConverter": "int", "StringConverter": "str", "SlugConverter": "slug"}
            tag = kind.get(type(converter).__name__, "path")
            url = url.replace(f"<{tag}:{key}>", str(value)).replace(f"<{key}>", str(value))
        assert "<" not in url, url
        out.append((route, pattern.name or "", url))
    return out, unclassified


def fingerprint() -> dict[str, str]:
    """A digest of every row, per table of the project: any write shows, and where."""
    digests = {}
    for app in ("annotation", "encoders"):
        for model in apps.get_app_config(app).get_models():
            rows = list(model.objects.order_by("pk").values_list())
            digests[model.__name__] = hashlib.sha256(repr(rows).encode()).hexdigest()
    return digests


@pytest.fixture
def beyond_the_wall(world, django_user_model):  # noqa: F811
    """Project B's objects of every kind, alice (a researcher of A) as the attacker, bob (a
    researcher of B) as the control."""
    from annotation.crowd.local.invitations import invitations_create

    run_b, b = world["run_b"], world["b"]
    hit = Hit.objects.filter(batch__run=run_b).order_by("pk").first()
    assignment = Assignment.objects.filter(hit__batch__run=run_b).order_by("pk").first()
    worker = Worker.objects.filter(assignments__hit__batch__run=run_b).order_by("pk").first()
    embedding_set = EmbeddingSet.objects.create(
        project=b,
        dataset=run_b.dataset,
        family="clip",
        model_name="m",
        checkpoint="m",
        checkpoint_sha256="0" * 64,
        preprocessing_sha256="0" * 64,
        state=EmbeddingState.READY,
    )
    provider_batches = {}
    for provider in ("prolific", "panel"):
        clone = Batch.objects.get(pk=hit.batch_id)
        clone.pk, clone.provider = None, provider
        clone.save()
        provider_batches[f"{provider}_batch"] = clone.pk
    export = Export.objects.create(run=run_b, format="eccv", version=1, path="x", checksum="")
    invitation = invitations_create(run=run_b, labels=["dora"])[0]
    bob = django_user_model.objects.create_user("bob", password="pw")
    ProjectMembership.objects.create(project=b, user=bob, role=ProjectRole.RESEARCHER)
    ids = {
        "run_id": run_b.pk,
        "batch_id": hit.batch_id,
        "hit_id": hit.pk,
        "assignment_id": assignment.pk,
        "export_id": export.pk,
        "job_id": world["job_b"].pk,
        "set_id": embedding_set.pk,
        "review_id": world["reviews_b"][0].pk,
        "worker_id": worker.pk,
        "invitation_id": invitation.pk,
        "image_id": run_b.dataset.images.order_by("pk").first().pk,
        "dataset_id": run_b.dataset_id,  # beside a walled id (a set of the dataset)
        **provider_batches,
    }
    return {"ids": ids, "alice": world["users"]["alice"], "bob": bob, "set": embedding_set}


def _client(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def test_every_route_with_an_id_is_walled_from_another_projects_researcher(beyond_the_wall):
    ids = beyond_the_wall["ids"]
    targets, unclassified = walked(ids)
    assert unclassified == [], "add these routes to the walker (or EXEMPT, with why)"
    assert len(targets) > 60  # the walk found the routes (API and pages)
    alice = _client(beyond_the_wall["alice"])
    installation_id()  # the installation's row, made on its first read: not a write of theirs
    before = fingerprint()
    let_through, wrote = [], []
    for route, name, url in targets:
        pattern = next(p for r, p in routes(get_resolver().url_patterns) if r == route)
        for method in methods_of(pattern):
            answer = (
                getattr(alice, method)(url, {}, format="json")
                if method != "get"
                else (alice.get(url))
            )
            refused = answer.status_code in (403, 404) or (
                answer.status_code == 405 and not route.startswith("api/")
            )
            if not refused:
                let_through.append(f"{method.upper()} {url} ({name}): {answer.status_code}")
            now = fingerprint()
            changed = [table for table, digest in now.items() if before[table] != digest]
            if changed:
                wrote.append(f"{method.upper()} {url} ({name}) changed {', '.join(changed)}")
                before = now
    assert let_through == [], "\n".join(let_through)
    assert wrote == [], "\n".join(wrote)


def test_the_walk_uses_real_ids_its_owner_reaches(beyond_the_wall):
    """The control: project B's researcher is not answered 404 on the walked GETs, so the
    attacker's 404s are the wall's, not an id that does not exist."""
    targets, _ = walked(beyond_the_wall["ids"])
    bob = _client(beyond_the_wall["bob"])
    gets = [
        (url, name)
        for route, name, url in targets
        if "get"
        in methods_of(next(p for r, p in routes(get_resolver().url_patterns) if r == route))
    ]
    not_found = [f"{url} ({name})" for url, name in gets if bob.get(url).status_code == 404]
    # A file the fake export does not hold (a 404 for its own researcher too).
    known = {
        "api-export-file",
        "api-export-file-path",
        "export-file",
        "export-file-path",
        "export-bundle",
        "api-export-bundle",
        # Entered from Prolific's test study only (its session), also for the owner.
        "prolific-test-task",
    }
    unexpected = [n for n in not_found if n.rsplit("(", 1)[1].rstrip(")") not in known]
    assert unexpected == [], "\n".join(unexpected)


def test_a_shared_datasets_routes_show_no_other_projects_sets(beyond_the_wall):
    embedding_set = beyond_the_wall["set"]
    alice = _client(beyond_the_wall["alice"])
    listing = alice.get(f"/api/datasets/{embedding_set.dataset_id}/embeddings/")
    assert listing.status_code == 200 and listing.json()["count"] == 0
    page = alice.get(f"/datasets/{embedding_set.dataset_id}/embeddings/")
    assert page.status_code == 200 and f'id="set-{embedding_set.pk}"' not in page.content.decode()
    bob = _client(beyond_the_wall["bob"])
    assert bob.get(f"/api/datasets/{embedding_set.dataset_id}/embeddings/").json()["count"] == 1
