"""The exports page (annotation/pages/exports/views.py, issue 28) renders an export's datasheet
and manifest."""

import pytest

from annotation.flows.eccv.services.export import eccv_export_start
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.models import Export, Review
from tests.annotation.selectors.datasets.test_data_browser import judged  # noqa: F401

pytestmark = pytest.mark.django_db


# Exports page


def test_exports_page_renders_the_datasheet_and_the_manifest(judged, run_on_commit, admin_client):  # noqa: F811
    from annotation.services.work.reviews import review_decide

    for review in Review.objects.filter(status="open"):
        review_decide(review=review, approve=True)
    job = run_on_commit(eccv_export_start, run=judged.run)
    job.refresh_from_db()
    assert job.state == "succeeded", job.error
    export = Export.objects.get(run=judged.run)
    assert export.manifest["instructions"][EccvStage.JUDGMENT]["version"] == "default"
    assert export.manifest["consent"]["version"]
    page = admin_client.get(f"/runs/{judged.run_id}/exports/").content.decode()
    assert 'class="datasheet"' in page and "<h2>Datasheet: " in page
    assert "<h3>Composition</h3>" in page and "<pre><code>{" in page
    assert "&quot;instructions&quot;" in page  # the manifest, as JSON text
