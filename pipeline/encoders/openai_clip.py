"""OpenAI-CLIP / open_clip ViT checkpoints in transformers' CLIPModel layout.

The source layout, as OpenAI's `clip/model.py` (and open_clip's `VisionTransformer` /
`TextTransformer`, which keep the same names) defines it:

    visual.conv1.weight [w, 3, p, p] (no bias)     visual.class_embedding [w]
    visual.positional_embedding [1 + g*g, w]       visual.ln_pre.{weight,bias}
    visual.transformer.resblocks.<i>.{ln_1, attn, ln_2, mlp}   visual.ln_post.{weight,bias}
    visual.proj [w, d]                              token_embedding.weight [vocab, t]
    positional_embedding [context, t]               transformer.resblocks.<i>...
    ln_final.{weight,bias}                          text_projection [t, d]   logit_scale []

with each residual block holding `attn.in_proj_weight` [3w, w] (query, key, value stacked),
`attn.in_proj_bias` [3w], `attn.out_proj.{weight,bias}`, `mlp.c_fc` [4w, w] and
`mlp.c_proj` [w, 4w]; x = x + attn(ln_1(x)); x = x + mlp(ln_2(x)). Projections multiply from
the right (x @ proj), so transformers' Linear weights are their transposes. OpenAI's JIT
archives also hold three integers (`input_resolution`, `context_length`, `vocab_size`), which
carry no weights. Every other key must map, and every key of the target must be filled:
anything left over is an error, never silently dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.errors import InputError

NOT_WEIGHTS = ("input_resolution", "context_length", "vocab_size")
_BLOCK = re.compile(r"^(visual\.)?transformer\.resblocks\.(\d+)\.(.+)$")
_BLOCK_PARTS = {
    "ln_1.weight": "layer_norm1.weight",
    "ln_1.bias": "layer_norm1.bias",
    "ln_2.weight": "layer_norm2.weight",
    "ln_2.bias": "layer_norm2.bias",
    "attn.out_proj.weight": "self_attn.out_proj.weight",
    "attn.out_proj.bias": "self_attn.out_proj.bias",
    "mlp.c_fc.weight": "mlp.fc1.weight",
    "mlp.c_fc.bias": "mlp.fc1.bias",
    "mlp.c_proj.weight": "mlp.fc2.weight",
    "mlp.c_proj.bias": "mlp.fc2.bias",
}
_DIRECT = {
    "visual.class_embedding": "vision_model.embeddings.class_embedding",
    "visual.conv1.weight": "vision_model.embeddings.patch_embedding.weight",
    "visual.positional_embedding": "vision_model.embeddings.position_embedding.weight",
    "visual.ln_pre.weight": "vision_model.pre_layrnorm.weight",
    "visual.ln_pre.bias": "vision_model.pre_layrnorm.bias",
    "visual.ln_post.weight": "vision_model.post_layernorm.weight",
    "visual.ln_post.bias": "vision_model.post_layernorm.bias",
    "token_embedding.weight": "text_model.embeddings.token_embedding.weight",
    "positional_embedding": "text_model.embeddings.position_embedding.weight",
    "ln_final.weight": "text_model.final_layer_norm.weight",
    "ln_final.bias": "text_model.final_layer_norm.bias",
    "logit_scale": "logit_scale",
}
_TRANSPOSED = {
    "visual.proj": "visual_projection.weight",
    "text_projection": "text_projection.weight",
}


@dataclass(frozen=True)
class ClipShape:
    """What the weights' shapes say about the model (heads are not in the weights)."""

    vision_width: int
    vision_layers: int
    patch_size: int
    image_size: int
    text_width: int
    text_layers: int
    context_length: int
    vocab_size: int
    embed_dim: int
    mlp_ratio_vision: int
    mlp_ratio_text: int


def _layers(keys: Any, prefix: str) -> int:
    found = {
        int(m.group(2)) for k in keys if (m := _BLOCK.match(k)) and bool(m.group(1)) == bool(prefix)
    }
    return max(found) + 1 if found else 0


def clip_shape(state: Mapping[str, Any]) -> ClipShape:
    """The model's sizes read from an OpenAI-layout state dict."""
    for key in (
        "visual.conv1.weight",
        "visual.positional_embedding",
        "token_embedding.weight",
        "positional_embedding",
        "text_projection",
        "visual.proj",
    ):
        if key not in state:
            raise InputError("missing key (not an OpenAI-CLIP ViT checkpoint?)", field=key)
    conv = state["visual.conv1.weight"]
    grid = round((state["visual.positional_embedding"].shape[0] - 1) ** 0.5)
    vision_width, text_width = int(conv.shape[0]), int(state["ln_final.weight"].shape[0])
    return ClipShape(
        vision_width=vision_width,
        vision_layers=_layers(state, "visual."),
        patch_size=int(conv.shape[-1]),
        image_size=int(conv.shape[-1]) * grid,
        text_width=text_width,
        text_layers=_layers(state, ""),
        context_length=int(state["positional_embedding"].shape[0]),
        vocab_size=int(state["token_embedding.weight"].shape[0]),
        embed_dim=int(state["text_projection"].shape[1]),
        mlp_ratio_vision=int(state["visual.transformer.resblocks.0.mlp.c_fc.weight"].shape[0])
        // vision_width,
        mlp_ratio_text=int(state["transformer.resblocks.0.mlp.c_fc.weight"].shape[0]) // text_width,
    )


def clip_config(
    shape: ClipShape,
    *,
    vision_heads: int | None = None,
    text_heads: int | None = None,
    activation: str = "quick_gelu",
    eos_token_id: int | None = None,
) -> dict[str, Any]:
    """transformers' CLIPConfig arguments. OpenAI's models use width // 64 heads and QuickGELU
    (x * sigmoid(1.702 x)); open_clip's LAION models use GELU: pass activation="gelu"."""
    eos = shape.vocab_size - 1 if eos_token_id is None else eos_token_id
    return {
        "projection_dim": shape.embed_dim,
        "vision_config": {
            "hidden_size": shape.vision_width,
            "intermediate_size": shape.vision_width * shape.mlp_ratio_vision,
            "num_hidden_layers": shape.vision_layers,
            "num_attention_heads": vision_heads or max(1, shape.vision_width // 64),
            "image_size": shape.image_size,
            "patch_size": shape.patch_size,
            "hidden_act": activation,
            "layer_norm_eps": 1e-5,
        },
        "text_config": {
            "vocab_size": shape.vocab_size,
            "hidden_size": shape.text_width,
            "intermediate_size": shape.text_width * shape.mlp_ratio_text,
            "num_hidden_layers": shape.text_layers,
            "num_attention_heads": text_heads or max(1, shape.text_width // 64),
            "max_position_embeddings": shape.context_length,
            "hidden_act": activation,
            "layer_norm_eps": 1e-5,
            # OpenAI pools at the end-of-text token, the largest id (argmax over the ids).
            "eos_token_id": eos,
            "pad_token_id": eos,
            "bos_token_id": eos - 1,
        },
    }


def convert_state(state: Mapping[str, Any], target_keys: Any) -> dict[str, Any]:
    """OpenAI-layout tensors renamed (and split, transposed) to transformers' names. Raises
    InputError naming the first key left unused in `state` or missing from `target_keys`."""
    out: dict[str, Any] = {}
    unused: list[str] = []
    for key, value in state.items():
        if key in NOT_WEIGHTS:
            continue
        if key in _DIRECT:
            out[_DIRECT[key]] = value.reshape(()) if key == "logit_scale" else value
            continue
        if key in _TRANSPOSED:
            out[_TRANSPOSED[key]] = value.t().contiguous()
            continue
        match = _BLOCK.match(key)
        if not match:
            unused.append(key)
            continue
        tower = "vision_model" if match.group(1) else "text_model"
        layer, part = match.group(2), match.group(3)
        prefix = f"{tower}.encoder.layers.{layer}."
        if part in ("attn.in_proj_weight", "attn.in_proj_bias"):
            kind = "weight" if part.endswith("weight") else "bias"
            for name, chunk in zip(("q", "k", "v"), value.chunk(3, dim=0), strict=True):
                out[f"{prefix}self_attn.{name}_proj.{kind}"] = chunk.contiguous()
        elif part in _BLOCK_PARTS:
            out[prefix + _BLOCK_PARTS[part]] = value
        else:
            unused.append(key)
    if unused:
        raise InputError(
            f"{len(unused)} key(s) of the checkpoint map to nothing", field=sorted(unused)[0]
        )
    missing = sorted(set(target_keys) - set(out))
    if missing:
        raise InputError(
            f"{len(missing)} weight(s) of the model not in the checkpoint", field=missing[0]
        )
    extra = sorted(set(out) - set(target_keys))
    if extra:
        raise InputError(
            f"{len(extra)} converted weight(s) have no place in the model", field=extra[0]
        )
    return out


def load_openai_state(path: str) -> dict[str, Any]:
    """The tensors of an OpenAI-CLIP (.pt, JIT or plain) or open_clip (.pt/.bin/.safetensors)
    checkpoint, read without running any of its code."""
    import torch

    if path.endswith(".safetensors"):
        from safetensors.torch import load_file

        return dict(load_file(path))
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except RuntimeError:  # a TorchScript archive (OpenAI's release): its tensors only
        state = torch.jit.load(path, map_location="cpu").state_dict()
    if isinstance(state, dict) and "state_dict" in state:
        state = state["state_dict"]
    if not isinstance(state, dict):
        raise InputError("not a state dict", file=path, field="checkpoint")
    # Weights saved from a DataParallel model carry a `module.` prefix.
    return {k.removeprefix("module."): v for k, v in state.items()}


def convert_openai_clip(
    state: Mapping[str, Any],
    *,
    vision_heads: int | None = None,
    text_heads: int | None = None,
    activation: str = "quick_gelu",
    eos_token_id: int | None = None,
) -> Any:
    """A transformers CLIPModel holding an OpenAI-layout state dict's weights exactly."""
    import torch
    from transformers import CLIPConfig, CLIPModel

    shape = clip_shape(state)
    config = CLIPConfig(
        **clip_config(
            shape,
            vision_heads=vision_heads,
            text_heads=text_heads,
            activation=activation,
            eos_token_id=eos_token_id,
        )
    )
    model = CLIPModel(config)
    target = model.state_dict()
    converted = convert_state(state, target.keys())
    for key, value in converted.items():
        if tuple(value.shape) != tuple(target[key].shape):
            raise InputError(
                f"shape {tuple(value.shape)} where the model needs {tuple(target[key].shape)}",
                field=key,
            )
    with torch.no_grad():
        model.load_state_dict({k: v.to(target[k].dtype) for k, v in converted.items()}, strict=True)
    return model.eval()
