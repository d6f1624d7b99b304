"""Amounts carry the installation's currency (CROWDVL_CURRENCY) on pages and in messages; a
provider paying in another currency refuses instead of converting."""

import pytest

from annotation.errors import ServiceError
from annotation.flows.bison.vocabulary import BisonStage
from annotation.services.runs.batches import batch_create, batch_publish
from tests.annotation.crowd.prolific.player import ProlificDriver

pytestmark = pytest.mark.django_db


def test_a_gbp_installation_shows_pounds_and_publishes_on_a_gbp_workspace(
    client, settings, paired_run, admin_client
):
    settings.CROWDVL_PUBLIC_URL = "https://crowd.example.org"
    pro = ProlificDriver(client, currency="GBP")
    try:
        batch = batch_create(
            run=paired_run, stage=BisonStage.SELECTION, provider="prolific", items_per_hit=2
        )
        page = admin_client.get(f"/batches/{batch.pk}/").content.decode()
        assert f'id="rewards">£{batch.hits.count() * batch.reward:.2f}' in page.replace("\n", "")
        assert "$" not in page.split('id="estimate-table"')[1].split("</table>")[0]
        pro.publish(batch)
        run_page = admin_client.get(f"/runs/{paired_run.pk}/").content.decode()
        assert "Committed £" in run_page
    finally:
        pro.done()


def test_mturk_refuses_an_installation_that_does_not_count_in_dollars(settings, paired_run):
    settings.CROWDVL_PUBLIC_URL = "https://crowd.example.org"
    settings.CROWDVL_CURRENCY = "GBP"
    batch = batch_create(
        run=paired_run, stage=BisonStage.SELECTION, provider="mturk", items_per_hit=2
    )
    with pytest.raises(ServiceError, match="US dollars"):
        batch_publish(batch=batch)
