"""Which caption scores a model family supports, computed per caption from unit rows.

CLIP-S (Hessel et al. 2021) = 2.5 * max(cos(image, caption), 0) and PAC-S (Sarto et al.
2023) = 2.0 * max(cos, 0); RefCLIP-S / RefPAC-S are the harmonic mean of that score and
max(0, the best cosine between the caption and a reference caption). Their weights rescale
a CLIP cosine (softmax-contrastive training, cosines mostly 0.1-0.4); PAC-S names the
PAC-S fine-tuned CLIP weights (with other CLIP weights the score is "PAC-S-style").

SigLIP models (Zhai et al. 2023) are trained with a pairwise sigmoid loss: their cosine is
calibrated only through the model's own scale and bias, so the CLIP-S/PAC-S weights do not
apply and are refused. What applies: SigLIP-S = sigmoid(exp(t) * cos + b), the model's own
probability that the caption matches the image, and its reference-based harmonic mean with
the best reference cosine (RefSigLIP-S), both reported per caption.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pipeline.caption_metrics import CLIP_S_W, PAC_S_W, reference_based, reference_free
from pipeline.errors import InputError

CLIP_SCORES = ("CLIP-S", "RefCLIP-S", "PAC-S-style", "RefPAC-S-style")
SIGLIP_SCORES = ("SigLIP-S", "RefSigLIP-S")
SCORES = {"clip": CLIP_SCORES, "siglip": SIGLIP_SCORES}


def scores_check(family: str, wanted: Sequence[str]) -> None:
    """InputError for a score that does not apply to the family, saying which do."""
    allowed = SCORES.get(family)
    if allowed is None:
        raise InputError(f"unknown model family {family!r}", field="family")
    for name in wanted:
        if name not in allowed:
            raise InputError(
                f"{name} does not apply to {family} models (their scores: {', '.join(allowed)})",
                field="scores",
            )


def caption_scores(
    family: str,
    image: np.ndarray,
    caption: np.ndarray,
    references: Sequence[np.ndarray],
    *,
    logit_scale: float = 0.0,
    logit_bias: float = 0.0,
    pac_checkpoint: bool = False,
) -> dict[str, np.ndarray]:
    """Every score of the family, one value per caption (row i of `image` with row i of
    `caption`; `references[i]`: the reference captions' rows for caption i)."""
    if family == "clip":
        clip = reference_free(image, caption, w=CLIP_S_W)
        pac = reference_free(image, caption, w=PAC_S_W)
        pac_name = "PAC-S" if pac_checkpoint else "PAC-S-style"
        return {
            "CLIP-S": clip,
            "RefCLIP-S": reference_based(clip, caption, references),
            pac_name: pac,
            f"Ref{pac_name}": reference_based(pac, caption, references),
        }
    scores_check(family, SIGLIP_SCORES)
    cos = np.einsum("ij,ij->i", image, caption).astype(np.float64)
    prob = 1.0 / (1.0 + np.exp(-(np.exp(logit_scale) * cos + logit_bias)))
    return {"SigLIP-S": prob, "RefSigLIP-S": reference_based(prob, caption, references)}
