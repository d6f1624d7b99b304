"""Every console page fits a laptop's 1,280 px window: headless Chromium follows the links of
the console from the dashboard (one page per route), over a realistic installation (an ECCV
run judged by a simulated crowd, some of its work held for review, exported with its
datasheet; a dataset with stored image-text embeddings), and checks that no page scrolls
sideways. A wide table may scroll inside its own box; the page itself never does.
Screenshots of each page go to CROWDVL_SHOTS when it is set."""

from urllib.parse import urlsplit

import pytest
from django.urls import Resolver404, resolve

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.encoders.services import embedding_set_start
from annotation.flows.eccv.services.export import eccv_export_start
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.models import Export, Review
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.reviews import review_decide
from pipeline.simulate import WorkerProfile
from tests.annotation.pages.batches.test_views_running_browser import shot
from tests.annotation.pages.dashboard.test_views_full_run_browser import sign_in
from tests.annotation.pages.work.test_shell_browser import browser  # noqa: F401
from tests.tiny_models import tiny_clip

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTH = 1280

# Pages a researcher reaches from the console's bars and lists; the crawl must find each.
EXPECTED = {
    "dashboard",
    "run-new",
    "run-new-kind",
    "datasets",
    "dataset-import",
    "dataset-embeddings",
    "review-queue",
    "projects",
    "run-page",
    "run-workers",
    "run-exports",
    "run-data",
    "run-texts",
    "run-input",
    "batch-new",
    "batch-launch",
    "invitations",
    "job-page",
}
# Not console pages, or not pages at all: downloads, images, the admin, the API, worker pages
# (tested in their own modules), and the review detail page (being reworked on its own).
SKIPPED = {
    "logout",
    "export-file",
    "export-file-path",
    "export-bundle",
    "staff-image",
    "review-detail",
    "batch-preview",
    "invitations-csv",
    "work-join",
    "work-start",
    "work-next",
    "work-assignment",
    "panel-entry",
    "panel-next",
    "panel-finish",
    "panel-task",
    "prolific-start",
    "prolific-task",
    "mturk-task",
}


@pytest.fixture
def installation(proposed, run_on_commit, settings, tmp_path):
    """The ECCV run of `proposed`, judged by a careless crowd (work held for review), half
    of the reviews decided, exported with the rest open; its dataset encoded by a tiny CLIP."""
    batch = batch_publish(
        batch=batch_create(
            run=proposed, stage=EccvStage.JUDGMENT, provider="simulated", items_per_hit=6
        )
    )
    simulate_crowd(batch=batch, workers=3, profile=WorkerProfile(accuracy=0.8, gold_accuracy=0.5))
    for review in Review.objects.filter(status="open").order_by("pk")[::2]:
        review_decide(review=review, approve=True)
    job = run_on_commit(eccv_export_start, run=proposed, allow_open_reviews=True)
    job.refresh_from_db()
    assert job.state == "succeeded", job.error
    settings.CROWDVL_IMPORT_DIR = tmp_path / "import"
    tiny_clip(tmp_path / "import" / "tiny-clip")
    run_on_commit(
        embedding_set_start,
        dataset=proposed.dataset,
        checkpoint="tiny-clip",
        license="MIT",
        source="written by the tests (tiny random weights)",
    )
    assert Export.objects.filter(run=proposed).exists()
    return proposed


def _route(url: str, origin: str) -> str | None:
    """The route name of a console page link, None for anything else."""
    parts = urlsplit(url)
    if f"{parts.scheme}://{parts.netloc}" != origin or parts.path.startswith(
        ("/admin/", "/api/", "/static/", "/media/")
    ):
        return None
    try:
        name = resolve(parts.path).url_name
    except Resolver404:
        return None
    return None if name in SKIPPED else name


def test_every_console_page_fits_1280_px(browser, live_server, installation, admin_user):  # noqa: F811
    context = browser.new_context(viewport={"width": WIDTH, "height": 800})
    tab = context.new_page()
    sign_in(tab, live_server, admin_user.username, password="password")
    seen: dict[str, str] = {}
    wide: dict[str, int] = {}
    queue = [f"{live_server.url}/"]
    while queue:
        url = queue.pop(0)
        name = _route(url, live_server.url)
        if name is None or name in seen:
            continue
        seen[name] = url
        response = tab.goto(url)
        assert response is not None and response.status == 200, url
        width = tab.evaluate("document.documentElement.scrollWidth")
        if width > WIDTH:
            wide[url] = width
        shot(tab, name)
        links = tab.eval_on_selector_all(
            "a[href]:not([download])", "links => links.map(a => a.href.split('#')[0])"
        )
        queue.extend(links)
    assert set(seen) >= EXPECTED, sorted(EXPECTED - set(seen))
    assert wide == {}, f"pages wider than {WIDTH} px: {wide}"
    context.close()
