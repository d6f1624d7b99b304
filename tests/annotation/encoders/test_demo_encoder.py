"""`manage.py demo --encoder-checkpoint`: the encoder's demo step encodes the dataset through
the job and leaves the stored set for the flows; without a model it says how to give one."""

import io

import pytest
from django.core.management.base import OutputWrapper

from annotation.encoders.demo import encoder_demo
from annotation.encoders.models import EmbeddingSet
from annotation.flow_registry import DemoContext
from annotation.management.commands.demo import Command

pytestmark = pytest.mark.django_db


def _command():
    out = io.StringIO()
    command = Command(stdout=out)
    command.stdout = OutputWrapper(out)
    return command, out


def test_without_a_model_one_line_says_how_to_give_one(dataset):
    command, out = _command()
    options = {}
    encoder_demo(DemoContext(command=command, dataset=dataset, options=options))
    assert out.getvalue().count("\n") == 1 and "--encoder-checkpoint" in out.getvalue()
    assert "encoder_set" not in options and not EmbeddingSet.objects.exists()


@pytest.mark.django_db(transaction=True)  # as the demo runs: the job starts at once, waited for
def test_with_a_model_the_sample_is_encoded_for_the_flows(dataset, import_dir):
    command, out = _command()
    options = {"encoder_checkpoint": "tiny-clip"}
    encoder_demo(DemoContext(command=command, dataset=dataset, options=options))
    es = EmbeddingSet.objects.get()
    assert options["encoder_set"] == es.pk and es.state == "ready"
    assert f"{es.label}: {dataset.images.count()} images" in out.getvalue()
    assert "estimate:" in out.getvalue()


def test_a_model_outside_the_import_folder_is_refused(dataset, import_dir):
    command, out = _command()
    options = {"encoder_checkpoint": "/"}
    encoder_demo(DemoContext(command=command, dataset=dataset, options=options))
    assert "refused:" in out.getvalue() and "CROWDVL_IMPORT_DIR" in out.getvalue()
    assert "encoder_set" not in options
