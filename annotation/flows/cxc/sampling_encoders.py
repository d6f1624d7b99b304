"""Which encoders give CxC sampling's two similarities, and what the manifest says about them.

CxC's blog encodes images and captions with *different* methods (images: Graph-RISE;
captions: the Universal Sentence Encoder and averaged GloVe vectors) "to reduce the
dependence of the chosen pairs on the models used to find them". So by default (`different`)
the image similarity comes from the image encoder (an embedding set's image embeddings, the
user's file or the named stand-in) and the caption similarity from a separate text encoder:
another model's caption embeddings (`caption_set`) or FastText trained on the dataset's
captions. One image-text model for both (`joint`) must be asked for and is recorded as a
deviation. No numpy here: the run's settings read it at start-up (issue 46)."""

from __future__ import annotations

from typing import Any

from pipeline.errors import InputError

DIFFERENT = "different"
JOINT = "joint"
CHOICES = (DIFFERENT, JOINT)

# Said wherever FastText gives the caption similarity (the job's result, the manifest).
FASTTEXT_FOR_USE_GLOVE = (
    "one FastText model trained on the dataset's captions stands where CxC used two text "
    "encoders (the Universal Sentence Encoder and averaged GloVe vectors): neither can be "
    "downloaded at run time"
)
JOINT_DEVIATION = (
    "one image-text model gives both the image and the caption similarity (run setting "
    "sampling_encoders = joint); CxC used different encoders for images (Graph-RISE) and "
    "captions (USE, GloVe) to reduce the dependence of the chosen pairs on the models"
)


def sampling_encoders_check(
    *, mode: str, encoder: dict[str, Any] | None, caption_encoder: dict[str, Any] | None
) -> None:
    """Refuse a request whose encoders contradict the run's `sampling_encoders` setting."""
    if mode not in CHOICES:
        raise InputError(f"must be one of {', '.join(CHOICES)}", field="sampling_encoders")
    if mode == JOINT:
        if not encoder:
            raise InputError(
                "joint sampling needs an image-text model's embedding set (run input "
                "sample_encoder), whose image and caption embeddings give both similarities",
                field="sampling_encoders",
            )
        if caption_encoder:
            raise InputError(
                "the run's sampling_encoders is joint: one model gives both similarities, so "
                "no second set for the captions",
                field="caption_set",
            )
        return
    if not (caption_encoder and encoder):
        return  # FastText, or another model's captions beside a file's images
    if caption_encoder["checkpoint_sha256"] == encoder["checkpoint_sha256"]:
        raise InputError(
            f"set {caption_encoder['set']} is the same model as set {encoder['set']} "
            f"({encoder['model']}): the caption similarity must come from a different "
            "encoder (or set the run's sampling_encoders to joint)",
            field="caption_set",
        )


def encoders_record(*, mode: str, image: dict[str, Any], caption: dict[str, Any]) -> dict[str, Any]:
    """The manifest's `encoders` (both named) and `deviations` from CxC's sampling."""
    # Keyed by a short name, so the datasheet's table prints each sentence whole.
    deviations: dict[str, str] = {}
    if mode == JOINT:
        deviations["joint_encoder"] = JOINT_DEVIATION
    if caption.get("source") == "fasttext":
        deviations["fasttext_for_use_glove"] = FASTTEXT_FOR_USE_GLOVE
    if image.get("source") == "standin":
        deviations["image_standin"] = (
            "image similarity is a seeded random stand-in (no image encoder was given); CxC "
            "used Graph-RISE image embeddings"
        )
    return {
        "encoders": {
            "rule": mode,
            "image": _name(image),
            "caption": _name(caption),
            "different": _name(image) != _name(caption),
        },
        "deviations": deviations,
    }


def _name(source: dict[str, Any]) -> str:
    """A similarity's encoder by name: a model with its checkpoint hash, or its file."""
    if source.get("checkpoint_sha256"):
        return f"{source['model']} (checkpoint sha256 {source['checkpoint_sha256']})"
    return str(source.get("model") or source.get("file") or source.get("source"))
