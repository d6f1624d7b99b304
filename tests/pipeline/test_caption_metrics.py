"""CLIP-S / PAC-S scores and their correlation with the real Flickr8k judgments."""

from pathlib import Path

import numpy as np
import pytest
import sacrebleu
from scipy.stats import kendalltau

from pipeline.caption_metrics import (
    CLIP_S_W,
    PAC_S_W,
    kendall,
    mean_accuracy,
    pairwise_accuracy,
    reference_based,
    reference_draws,
    reference_free,
)
from pipeline.errors import InputError
from pipeline.flickr8k import derived_document, load_derived

FLICKR = Path(__file__).resolve().parents[1] / "data" / "flickr8k"  # see its README


def sample(name):
    return FLICKR / name


def test_reference_free_and_based_follow_the_papers_equations():
    image = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    cand = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.2]])
    clip = reference_free(image, cand, w=CLIP_S_W)
    assert clip.tolist() == pytest.approx([2.5, 0.0, 0.0])  # negative cosines count zero
    pac = reference_free(image, cand, w=PAC_S_W)
    assert pac[0] == pytest.approx(2.0)
    refs = [np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]]), np.array([[1.0, 0.0]])]
    ref = reference_based(clip, cand, refs)
    assert ref[0] == pytest.approx(2 * 2.5 * 1.0 / 3.5)  # H-mean(2.5, 1.0)
    assert ref[1] == 0.0 and ref[2] == 0.0
    with pytest.raises(InputError):
        reference_free(image, np.array([[np.nan, 0.0]] * 3), w=2.0)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("flickr8k_expert.sample.derived.json", "expert"),
        ("crowdflower_flickr8k.sample.derived.json", "cf"),
    ],
)
def test_a_reference_metric_on_the_real_flickr8k_samples_matches_scipy(name, kind):
    judgements = load_derived(sample(name))
    assert len(judgements) == (747 if kind == "expert" else 1950)
    bleu = [
        sacrebleu.sentence_bleu(j.caption, list(j.references) or [""]).score for j in judgements
    ]
    human = [j.rating for j in judgements]
    tau_b, tau_c = kendall(bleu, human, variant="b"), kendall(bleu, human, variant="c")
    assert tau_b == kendalltau(bleu, human, variant="b").statistic
    assert tau_c == kendalltau(bleu, human, variant="c").statistic
    # Sentence BLEU agrees with people, weakly (the paper: BLEU-4 tau-c 30.8 / 16.9).
    assert 0.05 < tau_b < 0.6
    # Round trip through the layout.
    again = load_derived_document(derived_document(judgements))
    assert again == judgements


def load_derived_document(document):
    import json
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(document, handle)
    return load_derived(handle.name)


def test_pairwise_accuracy_per_category():
    acc = pairwise_accuracy(
        [0.9, 0.2, 0.5, 0.4], [0.1, 0.8, 0.5, 0.3], [0.9, 0.1, 0.7, 0.5], ["HC", "HC", "HI", "MM"]
    )
    assert acc == {"HC": 100.0, "HI": 50.0, "MM": 50.0, "mean": 66.67}
    with pytest.raises(InputError):
        pairwise_accuracy([1.0], [0.0], [1.0], ["XX"])


def test_reference_draws_follow_pascal50s_five_draws_of_five_references():
    refs = [[f"image {i} reference {n}" for n in range(48)] for i in range(4)] + [["a", "b"]]
    draws = reference_draws(refs, seed=7)
    assert len(draws) == 5 and all(len(d) == len(refs) for d in draws)
    for draw in draws:
        for given, picked in zip(refs, draw[:4], strict=False):
            assert len(set(picked)) == 5 and set(picked) <= set(given)
            assert list(picked) == sorted(picked, key=given.index)  # given order kept
        assert draw[4] == ("a", "b")  # fewer than five: all of them
    assert len({draw[0] for draw in draws}) > 1  # the draws differ
    assert reference_draws(refs, seed=7) == draws  # seeded
    assert reference_draws(refs, seed=8) != draws
    assert mean_accuracy([{"HC": 50.0, "mean": 50.0}, {"HC": 75.0, "mean": 75.0}]) == {
        "HC": 62.5,
        "mean": 62.5,
    }
    with pytest.raises(InputError):
        reference_draws(refs, draws=0)
