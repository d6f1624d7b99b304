"""Tiny, seeded, randomly initialised CLIP and SigLIP model folders for tests, written with
their image processor and a tokenizer whose vocabulary the test builds itself (nothing is
downloaded): the 256 byte symbols, their end-of-word forms, a few merges, and the start and
end tokens (the end token has the largest id, as in OpenAI's vocabulary)."""

from __future__ import annotations

import json
from pathlib import Path

IMAGE_SIZE = 32
CONTEXT = 16
MERGES = ["a </w>", "t h", "th e</w>", "o n", "c a", "ca t</w>"]


def tiny_tokenizer(folder: Path):
    from transformers import CLIPTokenizer
    from transformers.models.clip.tokenization_clip import bytes_to_unicode

    folder.mkdir(parents=True, exist_ok=True)
    symbols = list(bytes_to_unicode().values())
    vocab: dict[str, int] = {}
    for s in [*symbols, *(s + "</w>" for s in symbols)]:
        vocab[s] = len(vocab)
    for merge in MERGES:
        vocab[merge.replace(" ", "")] = len(vocab)
    for special in ("</w>", "<|startoftext|>", "<|endoftext|>"):
        vocab[special] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(MERGES) + "\n")
    return CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"))


def _towers(vocab: int, eos: int) -> dict:
    common = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2}
    return {
        "text_config": {
            **common,
            "num_attention_heads": 4,
            "vocab_size": vocab,
            "max_position_embeddings": CONTEXT,
            "eos_token_id": eos,
            "pad_token_id": eos,
            "bos_token_id": eos - 1,
        },
        "vision_config": {
            **common,
            "num_attention_heads": 4,
            "image_size": IMAGE_SIZE,
            "patch_size": 8,
        },
    }


def tiny_clip(folder: Path, *, seed: int = 0) -> Path:
    """A CLIP model folder (~250 KB): config, safetensors weights, processor, tokenizer."""
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel

    tokenizer = tiny_tokenizer(folder)
    torch.manual_seed(seed)
    model = CLIPModel(
        CLIPConfig(projection_dim=16, **_towers(len(tokenizer), tokenizer.eos_token_id))
    )
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    CLIPImageProcessor(
        size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}
    ).save_pretrained(folder)
    return folder


def tiny_siglip(folder: Path, *, seed: int = 0) -> Path:
    import torch
    from transformers import SiglipConfig, SiglipImageProcessor, SiglipModel

    tokenizer = tiny_tokenizer(folder)
    torch.manual_seed(seed)
    model = SiglipModel(SiglipConfig(**_towers(len(tokenizer), tokenizer.eos_token_id)))
    with torch.no_grad():  # non-trivial scale and bias, so the sigmoid score is tested
        model.logit_scale.fill_(1.5)
        model.logit_bias.fill_(-0.5)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    SiglipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}).save_pretrained(folder)
    return folder


def write_images(folder: Path, names: list[str], *, seed: int = 0) -> None:
    """Small random JPEGs of different sizes."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for n, name in enumerate(names):
        pixels = rng.integers(0, 256, size=(24 + n % 17, 30 + n % 13, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(folder / name, format="JPEG")
