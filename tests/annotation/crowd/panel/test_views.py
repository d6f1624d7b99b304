"""A panel participant's path through Django's test client: the study link binds the
session to its id, the run's consent text comes first, tasks are claimed by the claim rule of
every worker and stored unconfirmed, and the end shows a completion code per outcome or sends
the participant to the panel's completion URL."""

import re

import pytest

from annotation.crowd.panel.models import Participant
from annotation.crowd.panel.services import panel_settings_set
from annotation.errors import ServiceError
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Answer, Assignment, AssignmentState, Event, PoolMembership, Worker
from annotation.providers import provider_for
from annotation.selectors.work.invitations import run_consent
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.worker_actions import worker_block, workers_notify
from annotation.services.work.worker_identity import worker_get_or_create
from pipeline.errors import InputError
from tests.annotation.crowd.panel.player import PanelDriver
from tests.factories import selection_done_factory

pytestmark = pytest.mark.django_db


def panel_batch(run, *, stage=BisonStage.SELECTION, items_per_hit=3, publish=True, **panel):
    batch = batch_create(
        run=run,
        stage=stage,
        provider="panel",
        items_per_hit=items_per_hit,
        options={"panel": panel} if panel else None,
    )
    return batch_publish(batch=batch) if publish else batch


def answers_of(assignment):
    return {f"q{q.position}": "none" for q in assignment.hit.questions.all()}


def task_id(response):
    found = re.search(r"/panel/task/(\d+)/$", response["Location"])
    assert found, response["Location"]
    return int(found.group(1))


def test_the_study_link_binds_the_session_consent_comes_first_then_tasks(client, paired_run):
    batch = panel_batch(paired_run)
    response = client.get(f"/panel/{batch.pk}/", {"participantId": "PX7Q2"})
    assert response.status_code == 302 and response["Location"] == f"/panel/{batch.pk}/"
    assert not Worker.objects.filter(provider="panel").exists()  # nothing written on arrival
    # Before consenting there is no task: the next page sends them back to the consent page.
    assert client.get(f"/panel/{batch.pk}/next/")["Location"] == f"/panel/{batch.pk}/"
    page = client.get(f"/panel/{batch.pk}/").content.decode()
    consent = run_consent(paired_run)
    assert "research study" in page and f'value="{consent["version"]}"' in page
    stale = client.post(f"/panel/{batch.pk}/", {"version": "old"})
    assert stale.status_code == 400 and "changed while you read it" in stale.content.decode()
    assert client.post(f"/panel/{batch.pk}/", {"version": consent["version"]}).status_code == 302
    # The consent waits in the session: rows are written when work starts (issue 47).
    assert not Worker.objects.filter(provider="panel").exists()
    start = client.get(f"/panel/{batch.pk}/").content.decode()
    assert 'id="start"' in start

    url = f"/panel/task/{task_id(client.get(f'/panel/{batch.pk}/next/'))}/"
    worker = Worker.objects.get(provider="panel", external_id="PX7Q2")
    assert Participant.objects.get(worker=worker).consent_version == consent["version"]
    assignment = Assignment.objects.get(worker=worker)
    assert assignment.confirmed is False  # the id is their word until the panel confirms it
    html = client.get(url).content.decode()
    assert html.count('class="question"') == 3 and f'href="/panel/{batch.pk}/finish/"' in html
    assert client.post(url, {"q0": "none"}).status_code == 400  # the task page's own checks
    response = client.post(url, answers_of(assignment))
    assert response.status_code == 302 and response["Location"] == f"/panel/{batch.pk}/next/"
    assignment.refresh_from_db()
    assert assignment.state == AssignmentState.SUBMITTED and not assignment.confirmed
    assert Answer.objects.filter(assignment=assignment).count() == 3
    assert assignment.hit.status == "open"  # waiting work does not count yet


@pytest.mark.parametrize(
    "value", [None, "", "%SURVEY_CODE%", "{{%PROLIFIC_PID%}}", "a b", "x" * 65]
)
def test_a_link_without_a_valid_participant_id_is_refused(client, paired_run, value):
    batch = panel_batch(paired_run)
    query = {} if value is None else {"participantId": value}
    response = client.get(f"/panel/{batch.pk}/", query)
    assert response.status_code == 400 and "participant id" in response.content.decode()
    assert client.get(f"/panel/{batch.pk}/next/").status_code == 403
    assert not Worker.objects.filter(provider="panel").exists()


def test_the_id_parameter_is_the_batchs_own(client, paired_run):
    batch = panel_batch(paired_run, id_param="id")
    assert client.get(f"/panel/{batch.pk}/", {"participantId": "P1"}).status_code == 400
    driver = PanelDriver(client)
    assert driver.take(batch, "P1") is not None
    assert provider_for("panel").worker_url(batch=batch).endswith(f"/panel/{batch.pk}/?id=")


def test_another_session_cannot_open_a_participants_task(client, paired_run):
    batch = panel_batch(paired_run)
    driver = PanelDriver(client)
    mine = driver.take(batch, "P1")
    url = f"/panel/task/{mine.pk}/"
    assert client.get(url).status_code == 200
    driver.arrive(batch, "P2")
    assert client.get(url).status_code == 404
    assert client.post(url, answers_of(mine)).status_code == 404
    # Nor a local worker's page, nor the panel's page of a local assignment.
    assert client.get(f"/work/assignment/{mine.pk}/").status_code == 404


def test_a_changed_consent_text_is_asked_again(client, paired_run):
    batch = panel_batch(paired_run)
    driver = PanelDriver(client)
    mine = driver.take(batch, "P1")
    paired_run.config["consent"] = "A new information text."
    paired_run.save()
    assert client.get(f"/panel/task/{mine.pk}/").status_code == 404
    assert "A new information text." in client.get(f"/panel/{batch.pk}/").content.decode()


def test_completion_codes_per_outcome(client, paired_run):
    batch = panel_batch(paired_run, items_per_hit=100, completion={"completed": "DONE-1"})
    assert batch.hits.count() == 1 and batch.assignments_per_hit == 1
    driver = PanelDriver(client)
    mine = driver.take(batch, "P1")
    client.post(f"/panel/task/{mine.pk}/", answers_of(mine))
    done = client.get(f"/panel/{batch.pk}/next/")  # nothing left for them: completed
    assert done.status_code == 200
    assert re.search(r'id="completion-code">DONE-1<', done.content.decode())
    # Someone else finds the only HIT held by waiting work: no work left, no code set.
    assert driver.take(batch, "P2") is None
    page = client.get(f"/panel/{batch.pk}/next/").content.decode()
    assert "no task left" in page and 'id="no-code"' in page
    panel_settings_set(batch=batch, changes={"completion": {"no_work": "NOWORK"}})
    assert "NOWORK" in client.get(f"/panel/{batch.pk}/next/").content.decode()
    outcomes = Event.objects.filter(action="panel.finished").values_list("data__outcome", flat=True)
    assert sorted(outcomes) == ["completed", "no_work"]  # once per participant and outcome


def test_a_participant_of_another_stages_pool_is_screened_out(client, paired_run):
    selection_done_factory(paired_run)
    batch = panel_batch(
        paired_run,
        stage=BisonStage.VERIFICATION,
        items_per_hit=100,
        completion={"completed": "C1", "screened_out": "SCREEN"},
    )
    selector = worker_get_or_create(provider="panel", external_id="P1")
    PoolMembership.objects.create(run=paired_run, worker=selector, stage=BisonStage.SELECTION)
    assert PanelDriver(client).take(batch, "P1") is None
    page = client.get(f"/panel/{batch.pk}/next/").content.decode()
    assert "no task for you" in page and "SCREEN" in page
    assert not Assignment.objects.filter(worker=selector).exists()


def test_a_blocked_participant_is_screened_out(client, paired_run):
    batch = panel_batch(paired_run, completion={"screened_out": "SCREEN"})
    worker_block(worker=worker_get_or_create(provider="panel", external_id="P1"), reason="spam")
    assert PanelDriver(client).take(batch, "P1") is None
    assert "SCREEN" in client.get(f"/panel/{batch.pk}/next/").content.decode()


def test_the_completion_url_takes_the_code_and_the_id(client, paired_run):
    url = "https://connect.cloudresearch.com/participantsite/complete?code={code}"
    batch = panel_batch(
        paired_run, items_per_hit=100, completion={"completed": "C-9"}, completion_url=url
    )
    driver = PanelDriver(client)
    mine = driver.take(batch, "P1")
    client.post(f"/panel/task/{mine.pk}/", answers_of(mine))
    response = client.get(f"/panel/{batch.pk}/next/")
    assert response.status_code == 302
    assert (
        response["Location"]
        == "https://connect.cloudresearch.com/participantsite/complete?code=C-9"
    )
    # SONA-style: the participant's id in the address, the code added as a parameter.
    panel_settings_set(
        batch=batch,
        changes={
            "completion_url": "https://uni.sona-systems.com/credit.aspx?experiment_id=5&survey_code={id}"
        },
    )
    assert client.get(f"/panel/{batch.pk}/next/")["Location"] == (
        "https://uni.sona-systems.com/credit.aspx?experiment_id=5&survey_code=P1&code=C-9"
    )
    # An outcome without a code is not sent anywhere: the page says to return the study.
    assert driver.take(batch, "P2") is None
    page = client.get(f"/panel/{batch.pk}/next/")
    assert page.status_code == 200 and 'id="no-code"' in page.content.decode()


def test_stopping_lets_the_open_task_go(client, paired_run):
    batch = panel_batch(paired_run, items_per_hit=100)
    driver = PanelDriver(client)
    mine = driver.take(batch, "P1")
    assert "no completion code" in client.get(f"/panel/{batch.pk}/finish/").content.decode()
    page = client.post(f"/panel/{batch.pk}/finish/").content.decode()
    assert 'id="no-code"' in page and "without submitting" in page  # returned: no code
    mine.refresh_from_db()
    assert mine.state == AssignmentState.ABANDONED
    other = driver.take(batch, "P2")  # the slot is free at once
    assert other is not None and other.hit_id == mine.hit_id
    # After some work, stopping is "completed".
    client.post(f"/panel/task/{other.pk}/", answers_of(other))
    code = batch.options["panel"]["completion"]["completed"]
    assert code in client.post(f"/panel/{batch.pk}/finish/").content.decode()


def test_a_draft_is_not_open(client, paired_run):
    batch = panel_batch(paired_run, publish=False)
    client.get(f"/panel/{batch.pk}/", {"participantId": "P1"})
    response = client.get(f"/panel/{batch.pk}/")
    assert response.status_code == 409 and "not open yet" in response.content.decode()


def test_a_named_panels_ids_are_its_own_and_kept_as_spelled(client, paired_run):
    batch = panel_batch(paired_run, name="connect")
    driver = PanelDriver(client)
    driver.take(batch, "AbC1")
    driver.take(batch, "abc1")
    ids = set(Worker.objects.filter(provider="panel").values_list("external_id", flat=True))
    assert ids == {"connect:AbC1", "connect:abc1"}
    with pytest.raises(ServiceError, match="name cannot change"):
        panel_settings_set(batch=batch, changes={"name": "sona"})


def test_settings_are_checked(paired_run):
    cases = [
        ({"id_param": "participant id"}, "panel.id_param"),
        ({"completion_url": "javascript:alert(1)"}, "panel.completion_url"),
        ({"completion_url": "ftp://files.example.org/done"}, "panel.completion_url"),
        ({"completion": {"completed": "no spaces"}}, "panel.completion.completed"),
        ({"completion": {"finished": "X"}}, "panel.completion.finished"),
        ({"name": "Connect!"}, "panel.name"),
        ({"colour": "red"}, "panel.colour"),
    ]
    for panel, field in cases:
        with pytest.raises(InputError) as caught:
            batch_create(
                run=paired_run,
                stage=BisonStage.SELECTION,
                provider="panel",
                options={"panel": panel},
            )
        assert caught.value.field == field, panel
    assert not paired_run.batches.exists()
    batch = panel_batch(paired_run, publish=False)
    stored = batch.options["panel"]
    assert stored["id_param"] == "participantId" and stored["completion"]["completed"]


def test_notify_is_refused_and_says_so(client, paired_run):
    batch = panel_batch(paired_run)
    mine = PanelDriver(client).take(batch, "P1")
    with pytest.raises(ServiceError, match="no messaging API"):
        workers_notify(workers=[mine.worker], subject="Hi", message="Thanks")
    assert not Event.objects.filter(action="worker.notified").exists()
