"""OpenAI CLIP's forward pass written out directly from its definition (clip/model.py as
described in the paper's code release: a ViT with a class token and pre/post layer norms, a
causal text transformer pooled at the end-of-text token, QuickGELU MLPs, projections
multiplied from the right), over an OpenAI-layout state dict. Independent of transformers:
the conversion's outputs are checked against it."""

from __future__ import annotations

import torch


def _ln(x, state, name):
    return torch.nn.functional.layer_norm(
        x, (x.shape[-1],), state[f"{name}.weight"], state[f"{name}.bias"], eps=1e-5
    )


def _attention(x, state, name, heads, causal):
    n, t, w = x.shape
    qkv = x @ state[f"{name}.in_proj_weight"].T + state[f"{name}.in_proj_bias"]
    q, k, v = (z.reshape(n, t, heads, w // heads).transpose(1, 2) for z in qkv.split(w, dim=-1))
    logits = q @ k.transpose(-1, -2) / (w // heads) ** 0.5
    if causal:
        logits = logits.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
    out = (logits.softmax(-1) @ v).transpose(1, 2).reshape(n, t, w)
    return out @ state[f"{name}.out_proj.weight"].T + state[f"{name}.out_proj.bias"]


def _blocks(x, state, prefix, heads, causal):
    i = 0
    while f"{prefix}.{i}.ln_1.weight" in state:
        b = f"{prefix}.{i}"
        x = x + _attention(_ln(x, state, f"{b}.ln_1"), state, f"{b}.attn", heads, causal)
        h = (
            _ln(x, state, f"{b}.ln_2") @ state[f"{b}.mlp.c_fc.weight"].T
            + state[f"{b}.mlp.c_fc.bias"]
        )
        h = h * torch.sigmoid(1.702 * h)  # QuickGELU
        x = x + h @ state[f"{b}.mlp.c_proj.weight"].T + state[f"{b}.mlp.c_proj.bias"]
        i += 1
    return x


def encode_image(state, pixels, heads):
    conv = state["visual.conv1.weight"]
    x = torch.nn.functional.conv2d(pixels, conv, stride=conv.shape[-1])
    x = x.flatten(2).transpose(1, 2)
    cls = state["visual.class_embedding"].expand(x.shape[0], 1, -1)
    x = torch.cat([cls, x], dim=1) + state["visual.positional_embedding"]
    x = _ln(x, state, "visual.ln_pre")
    x = _blocks(x, state, "visual.transformer.resblocks", heads, causal=False)
    return _ln(x[:, 0], state, "visual.ln_post") @ state["visual.proj"]


def encode_text(state, tokens, heads):
    x = state["token_embedding.weight"][tokens] + state["positional_embedding"][: tokens.shape[1]]
    x = _blocks(x, state, "transformer.resblocks", heads, causal=True)
    x = _ln(x, state, "ln_final")
    return x[torch.arange(x.shape[0]), tokens.argmax(dim=-1)] @ state["text_projection"]


def random_state(
    *, seed=0, width=32, layers=2, patch=8, grid=4, text_width=24, vocab=50, context=12, dim=16
):
    """A random OpenAI-layout ViT CLIP state dict (as `torch.load` of a checkpoint gives)."""
    g = torch.Generator().manual_seed(seed)

    def r(*shape, scale=0.2):
        return torch.randn(*shape, generator=g) * scale

    state = {
        "visual.conv1.weight": r(width, 3, patch, patch),
        "visual.class_embedding": r(width),
        "visual.positional_embedding": r(1 + grid * grid, width),
        "visual.ln_pre.weight": 1 + r(width, scale=0.1),
        "visual.ln_pre.bias": r(width, scale=0.1),
        "visual.ln_post.weight": 1 + r(width, scale=0.1),
        "visual.ln_post.bias": r(width, scale=0.1),
        "visual.proj": r(width, dim),
        "token_embedding.weight": r(vocab, text_width),
        "positional_embedding": r(context, text_width),
        "ln_final.weight": 1 + r(text_width, scale=0.1),
        "ln_final.bias": r(text_width, scale=0.1),
        "text_projection": r(text_width, dim),
        "logit_scale": torch.tensor(4.6052),
        "input_resolution": torch.tensor(patch * grid),
        "context_length": torch.tensor(context),
        "vocab_size": torch.tensor(vocab),
    }
    for prefix, w in (
        ("visual.transformer.resblocks", width),
        ("transformer.resblocks", text_width),
    ):
        for i in range(layers):
            b = f"{prefix}.{i}"
            state.update(
                {
                    f"{b}.ln_1.weight": 1 + r(w, scale=0.1),
                    f"{b}.ln_1.bias": r(w, scale=0.1),
                    f"{b}.ln_2.weight": 1 + r(w, scale=0.1),
                    f"{b}.ln_2.bias": r(w, scale=0.1),
                    f"{b}.attn.in_proj_weight": r(3 * w, w),
                    f"{b}.attn.in_proj_bias": r(3 * w),
                    f"{b}.attn.out_proj.weight": r(w, w),
                    f"{b}.attn.out_proj.bias": r(w),
                    f"{b}.mlp.c_fc.weight": r(4 * w, w),
                    f"{b}.mlp.c_fc.bias": r(4 * w),
                    f"{b}.mlp.c_proj.weight": r(w, 4 * w),
                    f"{b}.mlp.c_proj.bias": r(w),
                }
            )
    return state
