"""A hostile participant's ids and a careful researcher's codes: what a study link may carry
(ASCII letters, digits and . _ @ + -, a letter or digit first, kept as spelled), when the
completion code is shown and when the completion URL is used, and a bonus CSV none of whose
cells starts a formula."""

import csv
import io
import re

import pytest

from annotation.crowd.panel import options
from annotation.crowd.panel.approvals import panel_confirm
from annotation.crowd.panel.selectors import bonus_csv
from annotation.crowd.panel.services import panel_settings_set
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Worker
from annotation.services.runs.batches import batch_create
from annotation.services.work.worker_actions import worker_block, worker_bonus
from annotation.services.work.worker_identity import worker_get_or_create
from pipeline.errors import InputError
from tests.annotation.crowd.panel.player import PanelDriver
from tests.annotation.crowd.panel.test_views import answers_of, panel_batch

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "value",
    [
        "\u0420X7Q2",  # a Cyrillic capital ER: "PX7Q2" on screen
        "\uff30\uff38\uff17",  # full-width letters and digit
        "P\u212a7",  # the Kelvin sign, a "K"
        "PX7\u200bQ2",  # a zero-width space inside
        "\u200bPX7Q2",
        "\ufeffPX7Q2",  # a BOM in front
        "=cmd|' /C calc'!A0",  # would start a formula in the bonus CSV
        "@SUM(A1)",
        "+4412",
        "-4412",
        "sona:P1",  # another panel's worker id
    ],
)
def test_a_link_id_with_look_alikes_invisibles_or_a_formula_start_is_refused(
    client, paired_run, value
):
    batch = panel_batch(paired_run, name="connect")
    response = client.get(f"/panel/{batch.pk}/", {"participantId": value})
    assert response.status_code == 400 and "participant id" in response.content.decode()
    assert client.get(f"/panel/{batch.pk}/next/").status_code == 403
    assert not Worker.objects.filter(provider="panel").exists()
    # A NUL never reaches the view: any URL holding one is a 404 (annotation/middleware.py).
    assert client.get(f"/panel/{batch.pk}/", {"participantId": "PX7\x00"}).status_code == 404


def test_spaces_around_an_id_are_the_same_participant(client, paired_run):
    batch = panel_batch(paired_run)
    driver = PanelDriver(client)
    driver.take(batch, " P1\t")  # rows are written as work starts
    driver.take(batch, "P1")
    assert list(Worker.objects.filter(provider="panel").values_list("external_id", flat=True)) == [
        "P1"
    ]


def test_the_longest_id_fits_a_named_panels_worker_and_goes_back_as_spelled(client, paired_run):
    batch = panel_batch(paired_run, items_per_hit=100, name="a" * options.NAME_LENGTH)
    participant = "Ab.c_d@e+f-" + "9" * (options.PARTICIPANT_LENGTH - 11)
    assert len(participant) == options.PARTICIPANT_LENGTH
    mine = PanelDriver(client).take(batch, participant)
    assert mine.worker.external_id == f"{'a' * options.NAME_LENGTH}:{participant}"
    client.post(f"/panel/task/{mine.pk}/", answers_of(mine))
    panel_confirm(batch=batch, data=f"id\n{participant}\n".encode(), file="a.csv")
    mine.refresh_from_db()
    worker_bonus(assignment=mine, amount="0.10", reason="thanks")
    assert bonus_csv(batch=batch).splitlines()[1] == f"{participant},0.10,thanks"


def test_the_generated_code_is_random_and_shown_only_after_a_submitted_task(client, paired_run):
    codes = {options.new_code() for _ in range(50)}
    assert len(codes) == 50 and all(re.fullmatch(r"C[0-9A-F]{8}", c) for c in codes)
    batch = panel_batch(paired_run, items_per_hit=100)
    code = batch.options["panel"]["completion"]["completed"]
    assert re.fullmatch(r"C[0-9A-F]{8}", code)
    driver = PanelDriver(client)
    client.get(f"/panel/{batch.pk}/", {"participantId": "P1"})
    assert code not in client.get(f"/panel/{batch.pk}/").content.decode()  # consent
    mine = driver.take(batch, "P1")
    for url in (f"/panel/{batch.pk}/", f"/panel/task/{mine.pk}/", f"/panel/{batch.pk}/finish/"):
        assert code not in client.get(url).content.decode(), url
    # Someone else, with nothing left for them, gets no code (none is set for "no work").
    assert driver.take(batch, "P2") is None
    assert code not in client.get(f"/panel/{batch.pk}/next/").content.decode()
    driver.arrive(batch, "P1")
    client.post(f"/panel/task/{mine.pk}/", answers_of(mine))
    assert code in client.get(f"/panel/{batch.pk}/next/").content.decode()


def test_no_outcome_reached_without_a_task_may_share_the_completed_code(paired_run):
    with pytest.raises(InputError) as caught:
        batch_create(
            run=paired_run,
            stage=BisonStage.SELECTION,
            provider="panel",
            options={"panel": {"completion": {"completed": "X1", "screened_out": "X1"}}},
        )
    assert caught.value.field == "panel.completion.screened_out"
    assert "must differ from the completed code" in str(caught.value)
    batch = panel_batch(paired_run, completion={"completed": "X1", "screened_out": "SO1"})
    with pytest.raises(InputError) as caught:
        panel_settings_set(batch=batch, changes={"completion": {"no_work": "X1"}})
    assert caught.value.field == "panel.completion.no_work"
    with pytest.raises(InputError) as caught:
        panel_settings_set(batch=batch, changes={"completion": {"completed": "SO1"}})
    assert caught.value.field == "panel.completion.screened_out"
    batch.refresh_from_db()
    assert batch.options["panel"]["completion"] == {
        "completed": "X1",
        "screened_out": "SO1",
        "no_work": "",
    }
    # Screened out and no work may share a code: neither is finished work.
    panel_settings_set(batch=batch, changes={"completion": {"no_work": "SO1"}})


def test_only_completed_participants_are_sent_to_the_completion_url(client, paired_run):
    url = "https://uni.sona-systems.com/webstudy_credit.aspx?experiment_id=5&survey_code={id}"
    batch = panel_batch(
        paired_run,
        items_per_hit=100,
        completion={"completed": "C-9", "screened_out": "SO-1", "no_work": "NW-1"},
        completion_url=url,
    )
    driver = PanelDriver(client)
    mine = driver.take(batch, "P1")
    client.post(f"/panel/task/{mine.pk}/", answers_of(mine))
    done = client.get(f"/panel/{batch.pk}/next/")
    assert done.status_code == 302 and done["Location"] == url.replace("{id}", "P1") + "&code=C-9"
    # Loading SONA's completion URL grants the credit: not for one who did no task.
    assert driver.take(batch, "P2") is None  # the only HIT is held by P1's waiting work
    late = client.get(f"/panel/{batch.pk}/next/")
    assert late.status_code == 200 and 'id="completion-code">NW-1<' in late.content.decode()
    worker_block(worker=worker_get_or_create(provider="panel", external_id="P3"), reason="spam")
    assert driver.take(batch, "P3") is None
    blocked = client.get(f"/panel/{batch.pk}/next/")
    assert blocked.status_code == 200 and 'id="completion-code">SO-1<' in blocked.content.decode()


@pytest.mark.parametrize("start", ["=", "+", "-", "@"])
def test_no_participant_id_starts_a_formula_in_the_bonus_csv(client, paired_run, start):
    batch = panel_batch(paired_run, name="connect")
    mine = PanelDriver(client).take(batch, "P1")
    client.post(f"/panel/task/{mine.pk}/", answers_of(mine))
    panel_confirm(batch=batch, data=b"participant_id\nP1\n", file="approved.csv")
    mine.refresh_from_db()
    worker_bonus(assignment=mine, amount="0.50", reason="Careful work")
    # A worker row is kept for ever; one an older, looser check let in must stay text.
    hostile = f'{start}HYPERLINK("http://x.example","P1")'
    Worker.objects.filter(pk=mine.worker_id).update(external_id=f"connect:{hostile}")
    rows = list(csv.reader(io.StringIO(bonus_csv(batch=batch))))
    assert rows[1] == [f"'{hostile}", "0.50", "Careful work"]
    assert not any(cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row)
