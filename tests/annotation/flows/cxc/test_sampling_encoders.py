"""Which encoders give CxC sampling's similarities: a request contradicting the run's
`sampling_encoders` is refused naming the field, and the manifest's record names both
encoders and each deviation from CxC."""

import pytest

from annotation.flows.cxc.sampling_encoders import (
    FASTTEXT_FOR_USE_GLOVE,
    JOINT_DEVIATION,
    encoders_record,
    sampling_encoders_check,
)
from pipeline.errors import InputError

CLIP = {"set": 1, "model": "clip@aaaa", "checkpoint_sha256": "a" * 64, "file": "1.npz"}
SIGLIP = {"set": 2, "model": "siglip@bbbb", "checkpoint_sha256": "b" * 64, "file": "2.npz"}


@pytest.mark.parametrize(
    ("mode", "encoder", "caption_encoder", "field"),
    [
        ("joint", None, None, "sampling_encoders"),  # joint needs a set
        ("joint", CLIP, SIGLIP, "caption_set"),  # joint: no second model
        ("different", CLIP, {**CLIP, "set": 3}, "caption_set"),  # same checkpoint, other set
        ("both", CLIP, None, "sampling_encoders"),
    ],
)
def test_contradicting_requests_are_refused_naming_the_field(mode, encoder, caption_encoder, field):
    with pytest.raises(InputError) as refused:
        sampling_encoders_check(mode=mode, encoder=encoder, caption_encoder=caption_encoder)
    assert refused.value.field == field


def test_allowed_requests_pass():
    sampling_encoders_check(mode="different", encoder=None, caption_encoder=None)
    sampling_encoders_check(mode="different", encoder=CLIP, caption_encoder=SIGLIP)
    sampling_encoders_check(mode="joint", encoder=CLIP, caption_encoder=None)


def test_the_record_names_both_encoders_and_each_deviation():
    standin = {"source": "standin", "model": "standin:seeded-gaussian-512d-seed0"}
    fasttext = {"source": "fasttext", "model": "FastText, trained"}
    record = encoders_record(mode="different", image=standin, caption=fasttext)
    assert record["encoders"] == {
        "rule": "different",
        "image": "standin:seeded-gaussian-512d-seed0",
        "caption": "FastText, trained",
        "different": True,
    }
    assert set(record["deviations"]) == {"image_standin", "fasttext_for_use_glove"}
    assert record["deviations"]["fasttext_for_use_glove"] == FASTTEXT_FOR_USE_GLOVE

    model = {"source": "image_text_model", **CLIP}
    joint = encoders_record(mode="joint", image=model, caption=model)
    assert joint["encoders"]["different"] is False
    assert joint["deviations"] == {"joint_encoder": JOINT_DEVIATION}
    assert "a" * 64 in joint["encoders"]["image"]
