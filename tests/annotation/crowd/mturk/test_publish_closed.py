"""Amazon Mechanical Turk closed for good on 2026-09-30: production publishing is refused with
that message (never an AWS error, never a call to AWS), the console and the README say so and
name the paid crowd to use instead, and the sandbox and existing data keep working."""

from pathlib import Path

import pytest

from annotation.crowd.mturk.publish import mturk_publish_start
from annotation.errors import ServiceError
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Batch, BatchStatus
from annotation.providers import provider_for
from annotation.services.runs.batches import batch_create, batch_publish
from pipeline.errors import InputError
from tests.annotation.drivers import MTurkDriver

pytestmark = pytest.mark.django_db

README = Path(__file__).resolve().parents[4] / "README.md"


@pytest.fixture
def mt(client, settings):
    settings.CROWDVL_PUBLIC_URL = "https://crowd.example.org"
    driver = MTurkDriver(client)
    yield driver
    driver.done()  # no call to MTurk was left unmade, and none was made unexpected


def live_draft(run, settings, **options):
    settings.CROWDVL_MTURK_ENV = "production"
    return batch_create(
        run=run, stage=BisonStage.SELECTION, provider="mturk", items_per_hit=2, limit=2, **options
    )


def test_production_publishing_is_refused_with_the_closure_and_asks_aws_nothing(
    mt, paired_run, settings
):
    batch = live_draft(paired_run, settings)
    for publish in (mturk_publish_start, batch_publish):
        with pytest.raises(ServiceError) as caught:
            publish(batch=batch)
        message = str(caught.value)
        assert "closed for good on 2026-09-30" in message and "Prolific" in message
    batch.refresh_from_db()
    assert batch.status == BatchStatus.DRAFT
    assert not batch.hits.exclude(provider_hit_id="").exists()
    assert batch.hits.filter(create_attempted_at__isnull=False).count() == 0


def test_a_sandbox_pilot_or_skip_pilot_does_not_open_production(mt, paired_run, settings):
    settings.CROWDVL_MTURK_ENV = "sandbox"
    pilot = mt.publish(
        batch_create(
            run=paired_run, stage=BisonStage.SELECTION, provider="mturk", items_per_hit=2, limit=2
        )
    )
    assignment = mt.take(pilot, "TESTER")
    mt.submit(assignment, {f"q{q.position}": "none" for q in assignment.hit.questions.all()})
    with pytest.raises(InputError):  # the option is still checked
        live_draft(paired_run, settings, options={"skip_pilot": "yes"})
    for options in ({}, {"options": {"skip_pilot": True}}):
        with pytest.raises(ServiceError, match="closed for good"):
            mturk_publish_start(batch=live_draft(paired_run, settings, **options))


def test_the_launch_page_and_the_new_batch_form_say_it_closed(
    mt, paired_run, admin_client, settings
):
    sandbox = batch_create(
        run=paired_run, stage=BisonStage.SELECTION, provider="mturk", items_per_hit=2, limit=2
    )
    page = admin_client.get(f"/batches/{sandbox.pk}/").content.decode()
    assert 'id="provider-notice"' in page and "closed for good on 2026-09-30" in page
    assert "Prolific" in page
    live = live_draft(paired_run, settings)
    page = admin_client.get(f"/batches/{live.pk}/").content.decode()
    assert 'id="refusal"' in page and "closed for good" in page  # publish button disabled
    form = admin_client.get(f"/runs/{paired_run.pk}/batches/new/").content.decode()
    assert "closed for good on 2026-09-30" in form
    local = batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="local", limit=2)
    assert 'id="provider-notice"' not in admin_client.get(f"/batches/{local.pk}/").content.decode()


def test_the_api_refuses_production_with_the_closure(mt, paired_run, admin_client, settings):
    batch = live_draft(paired_run, settings)
    response = admin_client.post(f"/api/batches/{batch.pk}/publish/")
    assert response.status_code == 409, response.content
    assert "closed for good on 2026-09-30" in response.json()["error"]
    assert Batch.objects.get(pk=batch.pk).status == BatchStatus.DRAFT


def test_the_readme_and_the_provider_label_say_it_closed():
    text = README.read_text()
    section = text[text.index("## Amazon Mechanical Turk") :]
    assert "closed for good on 2026-09-30" in section[:1500]
    assert "Prolific" in section[:1500]
    assert "closed" in provider_for("mturk").label


def test_a_dry_run_says_publishing_would_be_refused_by_the_closure(mt, paired_run, settings):
    """Issue 46: `mturk_publish --dry-run` said nothing of the closure."""
    import io

    from django.core.management import call_command

    batch = live_draft(paired_run, settings)
    out = io.StringIO()
    call_command("mturk_publish", str(batch.pk), "--dry-run", stdout=out)
    assert "Publishing would be refused" in out.getvalue() and "closed" in out.getvalue()
