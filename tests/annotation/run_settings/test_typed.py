"""A run's stored config read as its flow's frozen, typed settings object
(`annotation/run_settings/typed.py`): defaults from the declarations, values converted once,
a bad value refused with its field named, and the stored JSON as it was (issue 49)."""

import dataclasses
from dataclasses import fields

import pytest

from annotation.flow_registry import flow_for_kind
from annotation.flows.bison.settings import BisonSettings
from annotation.flows.cxc.settings import CxcSettings
from annotation.flows.eccv.settings import EccvSettings
from annotation.flows.quality.settings import QualitySettings
from annotation.models import Run, RunKind
from annotation.run_settings import SHARED, RunSettings, RunTexts, run_settings, settings_type
from annotation.services.runs.runs import run_check_config, run_create
from pipeline.errors import InputError

TYPES = {
    RunKind.BISON: BisonSettings,
    RunKind.ECCV: EccvSettings,
    RunKind.CXC: CxcSettings,
    RunKind.QUALITY: QualitySettings,
}


def test_every_kind_has_its_settings_type():
    assert set(TYPES) == set(RunKind.values)
    for kind, kind_type in TYPES.items():
        assert settings_type(kind) is kind_type


@pytest.mark.parametrize("kind", RunKind.values)
def test_every_declared_setting_is_a_field_and_every_field_is_declared(kind):
    names = {f.name for f in fields(TYPES[kind])}
    declared = {s.key for s in flow_for_kind(kind).settings}
    assert declared <= names, sorted(declared - names)
    assert {s.key for s in SHARED} <= names
    assert names <= set(TYPES[kind].DECLARED), sorted(names - set(TYPES[kind].DECLARED))


@pytest.mark.parametrize("kind", RunKind.values)
def test_a_new_runs_defaults_read_as_the_declared_defaults(kind):
    settings = TYPES[kind].from_config(run_check_config(kind=kind, config={}))
    for setting in flow_for_kind(kind).settings:
        value = getattr(settings, setting.key)
        if setting.default is None or not setting.filled:
            continue
        expected = setting.default
        if isinstance(expected, list):
            expected = tuple(expected)
        assert value == expected and type(value) is type(expected), setting.key


def test_a_setting_left_out_of_a_stored_config_reads_as_it_did_before_it_existed():
    """No key: gold is the paper's (a run from before established gold), the aggregation is
    the flow's default rule and the datasheet says so; a new run stores `established`."""
    old = EccvSettings.from_config({})
    assert old.gold_source == "paper" and old.gold_agreement == 1.0
    assert old.aggregation is None and old.aggregation_rule == "majority"
    assert old.aggregation_chosen is None
    assert run_check_config(kind=RunKind.ECCV, config={})["gold_source"] == "established"
    bison = BisonSettings.from_config({"aggregation": "majority"})
    assert bison.aggregation_rule == "majority" == bison.aggregation_chosen
    assert QualitySettings.from_config({}).aggregation_chosen is None


def test_values_are_converted_once_and_the_object_is_frozen():
    settings = CxcSettings.from_config(
        run_check_config(
            kind=RunKind.CXC,
            config={"original_pairs": "20", "gold_tolerance": 2, "adaptive": {"start": 3}},
        )
    )
    assert settings.original_pairs == 20
    assert settings.gold_tolerance == 2.0 and type(settings.gold_tolerance) is float
    assert isinstance(settings.bins, tuple) and isinstance(settings.shares, tuple)
    assert settings.adaptive == {"start": 3}
    with pytest.raises(TypeError):
        settings.adaptive["start"] = 9  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.seed = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kind", "config", "field"),
    [
        (RunKind.BISON, {"verifiers": "2"}, "verifiers"),
        (RunKind.BISON, {"aggregation": "vote"}, "aggregation"),
        (RunKind.ECCV, {"cxc_threshold": float("nan")}, "cxc_threshold"),
        (RunKind.ECCV, {"original_positives": "yes"}, "original_positives"),
        (RunKind.ECCV, {"query_images": 5}, "query_images"),
        (RunKind.CXC, {"shares": [1, 1]}, "shares"),  # one share per bin: a rule across two
        (RunKind.CXC, {"original_pairs": "many"}, "original_pairs"),
        (RunKind.QUALITY, {"adaptive": [3, 7]}, "adaptive"),
        (RunKind.QUALITY, {"release": "cc-by"}, "release"),
        (RunKind.QUALITY, {"consent": "short"}, "consent"),
    ],
)
def test_a_bad_value_is_refused_naming_its_field(kind, config, field):
    with pytest.raises(InputError) as refused:
        TYPES[kind].from_config(config)
    assert refused.value.field == field


@pytest.mark.django_db
def test_the_stored_json_keeps_its_shape(dataset):
    """As given, with the flow's declared defaults filled in: an int stays an int, a key no
    setting names stays, an aggregation not chosen stays out."""
    run = run_create(
        dataset=dataset, kind=RunKind.BISON, config={"seed": 4, "note": "kept", "verifiers": 3}
    )
    stored = Run.objects.get(pk=run.pk).config
    assert stored == {"seed": 4, "note": "kept", "verifiers": 3, "hold_fast_seconds_per_item": 0.0}
    cxc = run_check_config(kind=RunKind.CXC, config={"gold_tolerance": 2})
    assert type(cxc["gold_tolerance"]) is int


@pytest.mark.django_db
def test_run_settings_reads_the_runs_flow_type_and_follows_edits(paired_run):
    settings = run_settings(paired_run)
    assert isinstance(settings, BisonSettings) and settings.verifiers == 2
    assert run_settings(paired_run, BisonSettings) is settings  # read once while unchanged
    as_other = run_settings(paired_run, EccvSettings)  # another flow's defaults
    assert isinstance(as_other, EccvSettings) and as_other.k == 5
    paired_run.config = {**paired_run.config, "verifiers": 3}
    assert run_settings(paired_run).verifiers == 3
    paired_run.config["aggregation"] = "majority"  # edited in place, not saved
    assert run_settings(paired_run, BisonSettings).aggregation_rule == "majority"
    other = Run.objects.get(pk=paired_run.pk)  # another instance of the stored row
    assert run_settings(other, BisonSettings).aggregation is None


def test_a_config_read_without_its_run_gives_its_texts():
    texts = RunTexts.from_config({"consent": "x" * 30, "instructions": {"a": "Do this."}})
    assert texts.consent == "x" * 30 and texts.instructions == {"a": "Do this."}
    assert RunTexts.from_config({"seed": "not read here"}).consent is None
    assert isinstance(RunSettings.from_config({}), RunSettings)
