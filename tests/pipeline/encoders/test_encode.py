"""A tiny CLIP/SigLIP folder loaded offline and its images and captions encoded: the rows
equal the library's own forward pass on the same inputs, normalised; batching changes
nothing; unreadable images are named and skipped; long captions are cut and counted."""

import socket

import numpy as np
import pytest
import torch
from PIL import Image

from pipeline.encoders.encode import encode_images, encode_texts, threads_for
from pipeline.encoders.estimate import encode_estimate
from pipeline.encoders.loading import checkpoint_sha256, encoder_load
from pipeline.errors import InputError
from tests.tiny_models import tiny_clip, tiny_siglip, write_images

NAMES = [f"im{i}.jpg" for i in range(5)]


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory):
    return tiny_clip(tmp_path_factory.mktemp("clip"))


@pytest.fixture(scope="module")
def siglip_dir(tmp_path_factory):
    return tiny_siglip(tmp_path_factory.mktemp("siglip"))


def _sources(folder):
    return [(n, (folder / n).read_bytes) for n in NAMES]


def test_clip_rows_equal_the_library_forward_pass(clip_dir, tmp_path):
    write_images(tmp_path, NAMES)
    encoder = encoder_load(clip_dir)
    assert encoder.family == "clip" and encoder.dim == 16
    got = encode_images(encoder, _sources(tmp_path), batch_size=2)
    assert got.names == NAMES and got.failed == []
    pictures = [Image.open(tmp_path / n).convert("RGB") for n in NAMES]
    pixels = encoder.image_processor(images=pictures, return_tensors="pt")["pixel_values"]
    with torch.no_grad():
        want = encoder.model(pixel_values=pixels, input_ids=torch.tensor([[1, 2]])).image_embeds
    np.testing.assert_allclose(got.rows, want.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(got.rows, axis=1), 1.0, rtol=1e-5)
    one_batch = encode_images(encoder, _sources(tmp_path), batch_size=64)
    np.testing.assert_allclose(one_batch.rows, got.rows, rtol=1e-4, atol=1e-5)

    texts = ["a cat", "the cat on a mat", "a"]
    rows = encode_texts(encoder, texts, batch_size=2)
    tokens = encoder.tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        want_t = encoder.model(pixel_values=pixels[:1], **tokens).text_embeds
    np.testing.assert_allclose(rows.rows, want_t.numpy(), rtol=1e-4, atol=1e-5)
    assert rows.truncated == 0


def test_siglip_rows_and_padding(siglip_dir):
    encoder = encoder_load(siglip_dir)
    assert encoder.family == "siglip"
    assert encoder.preprocessing["text"]["padding"] == "max_length"
    texts = ["a cat", "the cat"]
    rows = encode_texts(encoder, texts)
    tokens = encoder.tokenizer(texts, padding="max_length", max_length=16, return_tensors="pt")
    with torch.no_grad():
        want = encoder.model.get_text_features(input_ids=tokens["input_ids"])
    want = want / want.norm(dim=-1, keepdim=True)
    np.testing.assert_allclose(rows.rows, want.numpy(), rtol=1e-4, atol=1e-5)


def test_unreadable_images_are_named_and_skipped(clip_dir, tmp_path):
    write_images(tmp_path, NAMES[:2])
    (tmp_path / "broken.jpg").write_bytes(b"not an image")

    def gone():
        raise FileNotFoundError("file missing")

    sources = [
        (NAMES[0], (tmp_path / NAMES[0]).read_bytes),
        ("broken.jpg", (tmp_path / "broken.jpg").read_bytes),
        ("gone.jpg", gone),
        (NAMES[1], (tmp_path / NAMES[1]).read_bytes),
    ]
    got = encode_images(encoder_load(clip_dir), sources)
    assert got.names == NAMES[:2]
    assert [name for name, _ in got.failed] == ["broken.jpg", "gone.jpg"]
    assert "not a readable image" in got.failed[0][1] and "file missing" in got.failed[1][1]
    assert got.rows.shape == (2, 16)


def test_long_captions_are_truncated_and_counted(clip_dir):
    encoder = encoder_load(clip_dir)
    long = " ".join(["cat"] * 40)
    rows = encode_texts(encoder, ["a cat", long, long + " on a mat"])
    assert rows.truncated == 2
    assert rows.rows.shape == (3, 16)
    # Cut at the context: the same row as the caption's first 16 tokens.
    assert np.allclose(rows.rows[1], rows.rows[2], atol=1e-6)


def test_loading_is_offline_with_sockets_blocked(clip_dir, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a network connection was attempted")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    encoder = encoder_load(clip_dir)
    assert encode_texts(encoder, ["a cat"]).rows.shape == (1, 16)


def test_missing_folder_or_file_names_the_setting(tmp_path, clip_dir):
    with pytest.raises(InputError) as err:
        encoder_load(tmp_path / "nowhere")
    assert err.value.field == "checkpoint"
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError) as err:
        encoder_load(empty)
    assert err.value.field == "checkpoint" and "config.json" in str(err.value)
    broken = tmp_path / "noweights"
    broken.mkdir()
    (broken / "config.json").write_text((clip_dir / "config.json").read_text())
    with pytest.raises(InputError) as err:
        encoder_load(broken)
    assert err.value.field == "checkpoint"


def test_checkpoint_hash_follows_the_weights(tmp_path):
    a = tiny_clip(tmp_path / "a", seed=1)
    b = tiny_clip(tmp_path / "b", seed=1)
    c = tiny_clip(tmp_path / "c", seed=2)
    assert checkpoint_sha256(a) == checkpoint_sha256(b) != checkpoint_sha256(c)


def test_estimate_and_threads():
    vit_b32 = {
        "model_type": "clip",
        "vision_config": {
            "image_size": 224,
            "patch_size": 32,
            "hidden_size": 768,
            "num_hidden_layers": 12,
            "intermediate_size": 3072,
        },
        "text_config": {
            "hidden_size": 512,
            "num_hidden_layers": 12,
            "intermediate_size": 2048,
            "max_position_embeddings": 77,
        },
    }
    est = encode_estimate(vit_b32, images=40_504, captions=202_654)
    assert est.images_per_s == pytest.approx(11.0)
    assert est.captions_per_s == pytest.approx(45.0)
    assert est.seconds == pytest.approx(40_504 / 11 + 202_654 / 45)
    assert threads_for(cores=2, processes=2) == 1 and threads_for(cores=16, processes=2) == 8


@pytest.mark.parametrize("family", ["clip", "siglip"])
def test_one_tokenization_cuts_and_counts_as_the_library_does(family, clip_dir, siglip_dir):
    """Captions of the context's length less one, equal, one over, two over and far over:
    the tokens equal the tokenizer's own cut at the context and padding, the count is the
    captions whose full tokenization is longer than the context, and the tokenizer is called
    once per batch."""
    from pipeline.encoders.encode import tokenize

    encoder = encoder_load(clip_dir if family == "clip" else siglip_dir)
    limit = encoder.context_length
    words = ["the", "cat", *"bcdefghijklmnopqrsuvwxyz"]  # a token each
    texts = [" ".join(words[:n]) for n in (limit - 3, limit - 2, limit - 1, limit, 25)]
    texts += ["a cat", "the cat on a mat"]
    full = encoder.tokenizer(texts, truncation=False)["input_ids"]
    want_count = sum(len(ids) > limit for ids in full)
    assert [len(ids) for ids in full][:3] == [limit - 1, limit, limit + 1]  # the boundary
    want = encoder.tokenizer(
        texts,
        padding="max_length" if family == "siglip" else "longest",
        truncation=True,
        max_length=limit,
        return_tensors="pt",
    )
    calls = []
    tokenizer = encoder.tokenizer

    class Counting:
        def __getattr__(self, name):
            return getattr(tokenizer, name)

        def __call__(self, *args, **kwargs):
            calls.append(1)
            return tokenizer(*args, **kwargs)

    encoder.tokenizer = Counting()
    tokens, count = tokenize(encoder, texts)
    assert len(calls) == 1
    assert count == want_count == 3
    assert torch.equal(tokens["input_ids"], want["input_ids"])
    assert torch.equal(tokens["attention_mask"], want["attention_mask"])


def test_a_tokenizer_without_a_pad_token_pads_nothing_or_says_so(clip_dir):
    from pipeline.encoders.encode import tokenize

    encoder = encoder_load(clip_dir)
    tokenizer = encoder.tokenizer

    class NoPad:
        pad_token_id = None

        def __getattr__(self, name):
            return getattr(tokenizer, name)

        def __call__(self, *args, **kwargs):
            return tokenizer(*args, **kwargs)

    encoder.tokenizer = NoPad()
    tokens, _ = tokenize(encoder, ["a cat", "the cat"])  # equal lengths: nothing to pad
    assert torch.equal(
        tokens["input_ids"], tokenizer(["a cat", "the cat"], return_tensors="pt")["input_ids"]
    )
    with pytest.raises(InputError, match="no padding token"):
        tokenize(encoder, ["a cat", "the cat on a mat"])
