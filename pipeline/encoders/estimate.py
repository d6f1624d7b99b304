"""How long encoding will take, from a model's config alone (nothing loaded).

Scaled from the forward pass of a ViT-B/32-shaped CLIP measured on these 2-core machines
(fp32, CPU): about 11 images/s and 45 captions/s. The cost of a transformer pass grows with
layers x tokens x width^2 (plus the attention's tokens^2 x width), so another model's rate is
the reference rate times the ratio of those costs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

REFERENCE_IMAGES_PER_S = 11.0
REFERENCE_CAPTIONS_PER_S = 45.0


def _cost(layers: int, tokens: int, width: int, ratio: float = 4.0) -> float:
    return layers * (tokens * width * width * (4 + 2 * ratio) + 2 * tokens * tokens * width)


_VIT_B32_IMAGE = _cost(12, 50, 768)
_VIT_B32_TEXT = _cost(12, 20, 512)  # captions average ~20 tokens


@dataclass(frozen=True)
class Estimate:
    images_per_s: float
    captions_per_s: float
    seconds: float


def encode_estimate(
    described: dict[str, Any], *, images: int, captions: int, workers: int = 1
) -> Estimate:
    """Rates and total seconds for a model's config.json on this machine size."""
    vision, text = described.get("vision_config", {}), described.get("text_config", {})
    grid = int(vision.get("image_size", 224)) // int(vision.get("patch_size", 32))
    image_cost = _cost(
        int(vision.get("num_hidden_layers", 12)),
        grid * grid + 1,
        int(vision.get("hidden_size", 768)),
        int(vision.get("intermediate_size", 3072)) / int(vision.get("hidden_size", 768)),
    )
    text_tokens = 64 if described.get("model_type") == "siglip" else 20  # SigLIP pads to 64
    text_cost = _cost(
        int(text.get("num_hidden_layers", 12)),
        min(text_tokens, int(text.get("max_position_embeddings", 77))),
        int(text.get("hidden_size", 512)),
        int(text.get("intermediate_size", 2048)) / int(text.get("hidden_size", 512)),
    )
    # Tiny models are bound by decoding and preprocessing, not the pass: cap the rates.
    ips = min(REFERENCE_IMAGES_PER_S * _VIT_B32_IMAGE / image_cost, 400.0)
    cps = min(REFERENCE_CAPTIONS_PER_S * _VIT_B32_TEXT / text_cost, 4000.0)
    share = max(1, workers)
    seconds = (images / ips + captions / cps) / share
    return Estimate(images_per_s=ips, captions_per_s=cps, seconds=seconds)
