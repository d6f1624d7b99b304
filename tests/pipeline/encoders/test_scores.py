"""Caption scores against values worked out by hand on identical embeddings."""

import numpy as np
import pytest

from pipeline.encoders.scores import caption_scores, scores_check
from pipeline.errors import InputError


def test_clip_family_scores_equal_the_published_formulas():
    # cos(image, caption) = 0.6; the best reference cosine = 0.8 (of 0.8 and 0.0).
    image = np.array([[1.0, 0.0], [1.0, 0.0]])
    caption = np.array([[0.6, 0.8], [-0.6, 0.8]])  # second: cos -0.6, clipped to 0
    refs = [np.array([[0.0, 1.0], [-0.8, 0.6]]), np.array([[0.0, 1.0]])]
    got = caption_scores("clip", image, caption, refs)
    # CLIP-S = 2.5 * 0.6 = 1.5; RefCLIP-S = H(1.5, 0.8) = 2 * 1.5 * 0.8 / 2.3
    assert got["CLIP-S"] == pytest.approx([1.5, 0.0])
    assert got["RefCLIP-S"] == pytest.approx([2.4 / 2.3, 0.0])
    # PAC-S = 2.0 * 0.6 = 1.2; RefPAC-S = H(1.2, 0.8) = 1.92 / 2.0
    assert got["PAC-S-style"] == pytest.approx([1.2, 0.0])
    assert got["RefPAC-S-style"] == pytest.approx([0.96, 0.0])
    assert "PAC-S" in caption_scores("clip", image, caption, refs, pac_checkpoint=True)


def test_siglip_scores_and_refusals():
    image = np.array([[1.0, 0.0]])
    caption = np.array([[0.6, 0.8]])
    got = caption_scores(
        "siglip",
        image,
        caption,
        [np.array([[0.0, 1.0]])],
        logit_scale=np.log(10.0),
        logit_bias=-5.0,
    )
    p = 1 / (1 + np.exp(-(10 * 0.6 - 5)))  # sigmoid(1) = 0.7310...
    assert got["SigLIP-S"] == pytest.approx([p])
    assert got["RefSigLIP-S"] == pytest.approx([2 * p * 0.8 / (p + 0.8)])
    for name in ("CLIP-S", "RefCLIP-S", "PAC-S-style", "RefPAC-S-style"):
        with pytest.raises(InputError, match="does not apply to siglip"):
            scores_check("siglip", [name])
    with pytest.raises(InputError):
        scores_check("clip", ["SigLIP-S"])
