"""Run settings described once by their flow (label, unit, range, help): the new-run form, the
API's list of run kinds and the checks read the same declaration (issues 26 and 27)."""

import re

import pytest
from rest_framework.test import APIClient

from annotation.flow_registry import flow_for_kind
from annotation.models import Run, RunKind
from annotation.run_settings import Setting
from annotation.services.runs.runs import run_check_config
from pipeline.errors import InputError

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("kind", RunKind.values)
def test_every_setting_a_flow_fills_in_is_described_with_its_default(kind):
    flow = flow_for_kind(kind)
    described = {s.key: s for s in flow.settings}
    defaults = run_check_config(kind=kind, config={})
    missing = sorted(set(defaults) - set(described))
    assert not missing, f"{kind}: settings without a label, range and help: {missing}"
    for key, value in defaults.items():
        setting = described[key]
        assert setting.label and len(setting.help) > 20, key
        assert setting.default == value, key  # the form shows what the flow uses
    for setting in flow.settings:
        if setting.kind in ("int", "number"):
            assert setting.low is not None and setting.high is not None, setting.key


@pytest.mark.parametrize("kind", RunKind.values)
def test_each_described_range_is_enforced_by_the_checks(kind):
    for setting in flow_for_kind(kind).settings:
        if setting.kind == "choice":
            bad: object = "not-a-choice"
        elif setting.kind in ("int", "number") and setting.high is not None:
            bad = int(setting.high) + 1
        else:
            continue
        with pytest.raises(InputError) as refused:
            run_check_config(kind=kind, config={setting.key: bad})
        assert refused.value.field == setting.key


def test_the_form_shows_labels_units_ranges_help_and_settings_without_a_stored_default(
    admin_client,
):
    page = admin_client.get("/runs/new/bison/").content.decode()
    assert "Verifiers per triple (workers)" in page
    assert "Range: 1 to 10 workers." in page and "Default: 2." in page
    # `aggregation` is filled in by no default, so the old form never showed it.
    assert re.search(r'<select name="config_aggregation"', page)
    assert '<option value="dawid_skene">' in page
    eccv = admin_client.get("/runs/new/eccv/").content.decode()
    assert 'name="config_aggregation"' in eccv and "Candidates per model" in eccv
    assert '<details id="more-settings"' in eccv  # seed, consent, adaptive folded


@pytest.mark.parametrize(("kind", "advice"), [("bison", "Use unanimity"), ("eccv", "Use majority")])
def test_the_form_says_which_aggregation_to_use_from_the_calibrated_world(
    admin_client, kind, advice
):
    page = admin_client.get(f"/runs/new/{kind}/").content.decode()
    assert advice in page and "The calibrated world" in page


def test_a_setting_left_empty_takes_the_default_and_a_chosen_one_is_stored(dataset, admin_client):
    response = admin_client.post(
        "/runs/new/bison/",
        {
            "dataset": dataset.pk,
            "name": "r",
            "config_verifiers": "",
            "config_aggregation": "majority",
        },
    )
    assert response.status_code == 302
    run = Run.objects.get(name="r")
    assert run.config["verifiers"] == 2 and run.config["aggregation"] == "majority"


def test_an_error_is_shown_inside_its_fields_line(dataset, admin_client):
    response = admin_client.post(
        "/runs/new/cxc/", {"dataset": dataset.pk, "config_gold_tolerance": "9"}
    )
    assert response.status_code == 400
    page = response.content.decode()
    line = re.search(r'<p class="setting" id="setting-config_gold_tolerance">.*?</p>', page, re.S)
    assert line and "field-error" in line.group(0)
    response = admin_client.post("/runs/new/cxc/", {"dataset": dataset.pk, "config_seed": "x"})
    page = response.content.decode()
    assert '<details id="more-settings" open>' in page  # an advanced field's error is shown
    assert not Run.objects.exists()


def test_the_api_lists_every_kind_with_its_described_settings(admin_user, dataset):
    assert APIClient().get("/api/run-kinds/").status_code == 401
    client = APIClient()
    client.force_authenticate(admin_user)
    kinds = {row["kind"]: row for row in client.get("/api/run-kinds/").json()}
    assert set(kinds) == set(RunKind.values)
    verifiers = next(s for s in kinds["bison"]["settings"] if s["key"] == "verifiers")
    assert verifiers == {
        "key": "verifiers",
        "label": "Verifiers per triple",
        "help": verifiers["help"],
        "kind": "int",
        "default": 2,
        "unit": "workers",
        "low": 1.0,
        "high": 10.0,
        "choices": [],
    }
    created = client.post(
        "/api/runs/",
        {"dataset": dataset.pk, "kind": "bison", "config": {"aggregation": "nope"}},
        format="json",
    )
    assert created.status_code == 400 and created.json()["field"] == "aggregation"


def test_a_setting_is_declared_with_a_known_kind():
    with pytest.raises(ValueError):
        Setting("x", "X", "help", kind="colour")
    with pytest.raises(ValueError):
        Setting("x", "X", "help", kind="choice")


# --- every numeric setting of every flow, generated from the declarations (issue 47) -------

NUMERIC = ("int", "number", "int_or_all")


def bad_values(setting):
    """Values every numeric setting must refuse: not numbers, not finite, out of range."""
    out = [float("nan"), float("inf"), float("-inf"), "12", True, None, [1], {"a": 1}]
    if setting.kind != "number":
        out.append(1.5)
    if setting.low is not None:
        out.append(setting.low - 1)
    out.append(10**19 if setting.high is None else setting.high + 1)
    if setting.high is None or setting.high < 10**18:
        out.append(10**18)
    return out


def numeric_settings():
    return [
        (kind, setting)
        for kind in RunKind.values
        for setting in flow_for_kind(kind).settings
        if setting.kind in NUMERIC
    ]


@pytest.mark.parametrize(
    ("kind", "setting"), numeric_settings(), ids=lambda v: getattr(v, "key", v)
)
def test_every_numeric_setting_refuses_nan_inf_strings_and_out_of_range(kind, setting):
    for bad in bad_values(setting):
        if bad is None and setting.default is None:
            continue  # an optional setting may be left empty (documented: "Optional")
        if bad == "12" and setting.kind == "int_or_all":
            continue  # documented: a form's text field sends the number as text
        with pytest.raises(InputError) as refused:
            run_check_config(kind=kind, config={setting.key: bad})
        assert refused.value.field == setting.key, (setting.key, bad, refused.value.field)


def test_there_are_numeric_settings_to_check():
    assert len(numeric_settings()) > 20


def example_of(setting):
    """The example object a setting's help gives (`e.g. {...}`): its keys are the settings."""
    import json

    found = re.search(r"(\{.*\})", setting.help)
    return json.loads(found.group(1)) if found else None


def structured_settings():
    return [
        (kind, setting)
        for kind in RunKind.values
        for setting in flow_for_kind(kind).settings
        if setting.kind in ("object", "list")
    ]


BAD_INSIDE = [float("nan"), float("inf"), float("-inf"), -1, 10**18, "x", True, None]


@pytest.mark.parametrize(
    ("kind", "setting"), structured_settings(), ids=lambda v: getattr(v, "key", v)
)
def test_every_number_inside_an_object_or_list_setting_is_checked(kind, setting):
    if setting.kind == "list":
        value = list(setting.default)
        places = range(len(value))
    else:
        value = example_of(setting)
        assert value, f"{setting.key}: its help gives no example object to check"
        run_check_config(kind=kind, config={setting.key: value})  # the example itself is good
        places = list(value)
    for place in places:
        for bad in BAD_INSIDE:
            if bad == -1 and setting.key == "bins":
                continue  # a cosine edge may be -1 (the scale's low end)
            if bad == 10**18 and setting.key == "shares":
                continue  # documented: shares are weights, divided by their sum
            changed = (
                [*value[:place], bad, *value[place + 1 :]]
                if setting.kind == "list"
                else {**value, place: bad}
            )
            with pytest.raises(InputError) as refused:
                run_check_config(kind=kind, config={setting.key: changed})
            field = refused.value.field or ""
            assert field.split(".")[0] == setting.key, (setting.key, place, bad, field)
