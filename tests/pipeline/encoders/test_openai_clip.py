"""OpenAI-CLIP / open_clip checkpoints converted to transformers' layout give the original
forward pass's outputs (a direct implementation of it, on the same tiny random weights)."""

import pytest
import torch

from pipeline.encoders.openai_clip import clip_shape, convert_openai_clip, load_openai_state
from pipeline.errors import InputError
from tests.pipeline.encoders import clip_reference as ref


def test_converted_model_equals_the_original_forward_pass(tmp_path):
    state = ref.random_state(seed=3)
    path = tmp_path / "ViT-tiny.pt"
    torch.save(state, path)
    loaded = load_openai_state(str(path))
    model = convert_openai_clip(loaded, vision_heads=4, text_heads=3)
    shape = clip_shape(loaded)
    assert (shape.image_size, shape.patch_size, shape.vision_layers, shape.text_layers) == (
        32,
        8,
        2,
        2,
    )

    pixels = torch.randn(3, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    # Token rows: a start token, words, the end token (the largest id) and padding zeros.
    tokens = torch.tensor([[48, 5, 7, 49, 0, 0], [48, 9, 49, 0, 0, 0], [48, 1, 2, 3, 4, 49]])
    with torch.no_grad():
        ours_img = model.get_image_features(pixel_values=pixels)
        ours_txt = model.get_text_features(input_ids=tokens)
        want_img = ref.encode_image(state, pixels, heads=4)
        want_txt = ref.encode_text(state, tokens, heads=3)
    torch.testing.assert_close(ours_img, want_img, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(ours_txt, want_txt, rtol=1e-4, atol=1e-5)
    assert float(model.logit_scale.detach()) == pytest.approx(4.6052)


def test_an_unused_key_fails_the_conversion():
    state = ref.random_state()
    state["visual.attnpool.extra"] = torch.zeros(2)
    with pytest.raises(InputError) as err:
        convert_openai_clip(state, vision_heads=4, text_heads=3)
    assert err.value.field == "visual.attnpool.extra"
    assert "map to nothing" in str(err.value)


def test_a_missing_key_fails_the_conversion():
    state = ref.random_state()
    del state["transformer.resblocks.1.mlp.c_fc.bias"]
    with pytest.raises(InputError) as err:
        convert_openai_clip(state, vision_heads=4, text_heads=3)
    assert err.value.field == "text_model.encoder.layers.1.mlp.fc1.bias"


def test_open_clip_safetensors_and_module_prefix(tmp_path):
    from safetensors.torch import save_file

    state = ref.random_state(seed=5)
    path = tmp_path / "open_clip_model.safetensors"
    save_file({k: v.contiguous() for k, v in state.items()}, str(path))
    model = convert_openai_clip(load_openai_state(str(path)), vision_heads=4, text_heads=3)
    pixels = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        torch.testing.assert_close(
            model.get_image_features(pixel_values=pixels),
            ref.encode_image(state, pixels, heads=4),
            rtol=1e-4,
            atol=1e-5,
        )
    prefixed = tmp_path / "dp.pt"
    torch.save({"state_dict": {f"module.{k}": v for k, v in state.items()}}, prefixed)
    assert set(load_openai_state(str(prefixed))) == set(state)
