"""The datasets list and the new-run form (built from each flow's defaults, checked by the
same `run_create` as the CLI and the API)."""

import pytest

from annotation.models import Caption, Run, RunKind
from annotation.services.runs.runs import run_check_config

pytestmark = pytest.mark.django_db


def test_datasets_page_counts_images_and_captions(dataset, admin_client, client):
    assert client.get("/datasets/").status_code == 302  # staff only
    page = admin_client.get("/datasets/").content.decode()
    assert dataset.name in page
    images, captions = dataset.images.count(), Caption.objects.filter(dataset=dataset).count()
    assert images and captions
    assert f'<td class="images">{images}</td>' in page
    assert f'<td class="captions">{captions}</td>' in page


@pytest.mark.parametrize("kind", RunKind.values)
def test_every_flow_has_a_form_with_its_defaults(kind, admin_client):
    page = admin_client.get(f"/runs/new/{kind}/").content.decode()
    for key in run_check_config(kind=kind, config={}):
        assert f'name="config_{key}"' in page


def test_a_run_is_created_from_the_form(dataset, admin_client):
    assert f"/runs/new/{RunKind.BISON}/" in admin_client.get("/runs/new/").content.decode()
    response = admin_client.post(
        "/runs/new/bison/",
        {"dataset": dataset.pk, "name": "browser run", "config_verifiers": 3, "config_seed": 7},
    )
    assert response.status_code == 302
    run = Run.objects.get(name="browser run")
    assert run.kind == RunKind.BISON
    assert run.config == {"verifiers": 3, "seed": 7, "hold_fast_seconds_per_item": 0.0}


def test_a_bad_setting_is_refused_next_to_its_field_and_nothing_is_created(dataset, admin_client):
    response = admin_client.post(
        "/runs/new/bison/", {"dataset": dataset.pk, "config_verifiers": 0, "config_seed": 0}
    )
    assert response.status_code == 400
    form = response.context["form"]
    assert form.errors["config_verifiers"] and not Run.objects.exists()
    response = admin_client.post("/runs/new/bison/", {"dataset": "", "config_verifiers": 2})
    assert response.status_code == 400 and "dataset" in response.context["form"].errors
    assert admin_client.get("/runs/new/nonsense/").status_code == 404
    assert not Run.objects.exists()


@pytest.mark.parametrize("kind", RunKind.values)
def test_the_form_sent_as_shown_creates_a_run_with_the_flows_defaults(kind, dataset, admin_client):
    import html
    import re

    page = admin_client.get(f"/runs/new/{kind}/").content.decode()
    data = {"dataset": dataset.pk, "name": f"{kind} defaults"}
    for name, value in re.findall(r'<input[^>]*name="(config_\w+)"[^>]*value="([^"]*)"', page):
        data[name] = html.unescape(value)
    for name, value in re.findall(
        r'<textarea[^>]*name="(config_\w+)"[^>]*>([^<]*)</textarea>', page
    ):
        data[name] = html.unescape(value.strip())
    response = admin_client.post(f"/runs/new/{kind}/", data)
    assert response.status_code == 302, response.context["form"].errors
    run = Run.objects.get(name=f"{kind} defaults")
    defaults = run_check_config(kind=kind, config={})
    assert {k: run.config[k] for k in defaults} == defaults  # ECCV adds its query sample


def _undescribed(form) -> list[str]:
    """What a console form's fields leave unsaid: a label of their own, a help line, a
    number's unit, and what an optional field takes when left empty (pre-filled, or said)."""
    import re

    from django import forms

    missing = []
    for name, field in form.fields.items():
        if not field.label:
            missing.append(f"{name}: no label")
        if not field.help_text:
            missing.append(f"{name}: no help line")
        numeric = isinstance(field, forms.IntegerField | forms.DecimalField | forms.FloatField)
        if numeric and not re.search(r"\(.+\)$", field.label or ""):
            missing.append(f"{name}: no unit in its label")
        shown = form[name].initial not in (None, "") or field.widget.attrs.get("placeholder")
        if numeric and not shown:
            missing.append(f"{name}: its default is not shown in the field")
        if not field.required and "Default" not in (field.help_text or ""):
            missing.append(f"{name}: its help does not say its default")
    return missing


def test_every_console_form_says_units_defaults_and_help(paired_run, proposed):
    from annotation.crowd.local.invitation_views import InvitationsForm
    from annotation.models import Project
    from annotation.pages.batches.forms import BatchForm
    from annotation.pages.datasets.embeddings import EncodeForm
    from annotation.pages.datasets.views import DatasetImportForm
    from annotation.pages.exports.forms import ExportForm
    from annotation.pages.projects.views import MemberForm, ProjectForm

    forms = {
        "batch (BISON)": BatchForm(run=paired_run),
        "batch (ECCV)": BatchForm(run=proposed),
        "dataset import": DatasetImportForm(),
        "encode (staff)": EncodeForm(projects=Project.objects.all(), project_required=False),
        "encode (member)": EncodeForm(projects=Project.objects.all(), project_required=True),
        "export": ExportForm(run=proposed),
        "invitations": InvitationsForm(),
        "project": ProjectForm(),
        "member": MemberForm(),
    }
    assert {name: _undescribed(form) for name, form in forms.items()} == {
        name: [] for name in forms
    }


def test_the_export_form_starts_from_the_runs_terms(proposed):
    from annotation.pages.exports.forms import ExportForm
    from annotation.services.release.release_terms import run_release_terms_set

    run_release_terms_set(
        run=proposed, release={"license": "cc-by-4.0", "creators": "Ada; Alan", "citation": "X"}
    )
    form = ExportForm(run=proposed)
    assert [form[k].value() for k in ("license", "creators", "citation")] == [
        "cc-by-4.0",
        "Ada; Alan",
        "X",
    ]
    assert "the run's, cc-by-4.0" in form.fields["license"].help_text


def test_the_new_run_chooser_says_what_each_flow_builds(admin_client):
    """Each flow with its sentence, paper, machine steps and crowd stages, in the registry's
    words (a flow added later is described by its registration, not by the template)."""
    import html
    import re

    from annotation.flow_registry import flows

    page = html.unescape(admin_client.get("/runs/new/").content.decode())
    assert len(flows()) == len(RunKind.values)
    for flow in flows():
        card = re.search(
            rf'<section class="flow-choice" id="flow-{flow.run_kind}">(.*?)</section>', page, re.S
        )
        assert card, flow.name
        text = card.group(1)
        assert flow.summary and flow.summary in text
        assert flow.paper and flow.paper in text
        assert f'href="/runs/new/{flow.run_kind}/"' in text
        for _, stage in flow.stages:
            assert stage in text
        for label, _ in flow.run_jobs.values():
            assert label in text
