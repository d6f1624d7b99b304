"""Open a CLIP or SigLIP model folder with its own image processor and tokenizer, offline."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.errors import InputError

FAMILIES = ("clip", "siglip")
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
_HASH_BLOCK = 1 << 20


def offline() -> None:
    """Never let the hub client reach for the network, whatever the caller set."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


def torch_modules() -> tuple[Any, Any]:
    """torch and transformers, or a clear message naming the optional extra."""
    offline()
    try:
        import torch
        import transformers
    except ImportError:
        raise InputError(
            "image-text encoders need the optional extra: pip install -e '.[encoders]' "
            "(torch==2.13.0, a local CPU build, and transformers)",
            field="library",
        ) from None
    return torch, transformers


def weight_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in WEIGHT_SUFFIXES)


def checkpoint_sha256(path: str | Path) -> str:
    """sha256 over the weight files of a folder (names and bytes, sorted by name) or of one
    file: the identity stored embeddings are keyed by."""
    target = Path(path)
    files = weight_files(target) if target.is_dir() else [target]
    if not files:
        raise InputError(
            "no weight file (.safetensors, .bin, .pt)", file=str(path), field="checkpoint"
        )
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.name.encode() + b"\0")
        with open(file, "rb") as handle:
            while block := handle.read(_HASH_BLOCK):
                digest.update(block)
    return digest.hexdigest()


@dataclass
class Encoder:
    """A loaded model with its preprocessing; `family` is "clip" or "siglip"."""

    model: Any
    image_processor: Any
    tokenizer: Any
    family: str
    context_length: int
    dim: int
    device: str
    preprocessing: dict[str, Any] = field(default_factory=dict)


def model_config(folder: str | Path) -> dict[str, Any]:
    """The folder's config.json (what the estimate and the console read without torch)."""
    path = Path(folder) / "config.json"
    if not path.is_file():
        raise InputError(
            "not a transformers model folder: config.json is missing",
            file=str(folder),
            field="checkpoint",
        )
    try:
        described = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(
            f"unreadable config.json: {exc}", file=str(path), field="checkpoint"
        ) from None
    if described.get("model_type") not in FAMILIES:
        raise InputError(
            f"model_type {described.get('model_type')!r} is not one of {', '.join(FAMILIES)}",
            file=str(path),
            field="checkpoint",
        )
    return described


TOKENIZER_FILES = (
    "vocab.json",
    "merges.txt",
    "tokenizer.json",
    "spiece.model",
    "tokenizer_config.json",
)


def preprocessing_of(folder: str | Path) -> dict[str, Any]:
    """What decides the model's inputs, read from the folder's files (nothing imported): the
    image processor's settings, a hash of the tokenizer's files, the text context and padding.
    Two folders with the same weights and these equal give the same embeddings."""
    path = Path(folder)
    described = model_config(path)
    family = described["model_type"]
    processor_file = path / "preprocessor_config.json"
    if not processor_file.is_file():
        raise InputError(
            "preprocessor_config.json is missing (the model's image processor)",
            file=str(folder),
            field="checkpoint",
        )
    image = json.loads(processor_file.read_text())
    image.pop("processor_class", None)
    digest = hashlib.sha256()
    found = [name for name in TOKENIZER_FILES if (path / name).is_file()]
    if not found:
        raise InputError("no tokenizer files", file=str(folder), field="checkpoint")
    for name in found:
        digest.update(name.encode() + b"\0" + (path / name).read_bytes())
    context = int(described.get("text_config", {}).get("max_position_embeddings", 77))
    return {
        "image": image,
        "text": {
            "tokenizer_sha256": digest.hexdigest(),
            "context_length": context,
            # SigLIP was trained on captions padded to the full context; CLIP on unpadded ones.
            "padding": "max_length" if family == "siglip" else "longest",
            "truncation": True,
        },
    }


def preprocessing_sha256(preprocessing: dict[str, Any]) -> str:
    text = json.dumps(preprocessing, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def encoder_load(folder: str | Path, *, device: str = "cpu") -> Encoder:
    """The model of a local transformers folder (config.json, weights, image processor and
    tokenizer files), loaded with `local_files_only`: a missing file is an InputError naming
    the checkpoint setting, never a download."""
    path = Path(folder)
    if not path.is_dir():
        raise InputError("model folder does not exist", file=str(folder), field="checkpoint")
    family = model_config(path)["model_type"]
    preprocessing_of(path)  # the processor and tokenizer files are there
    torch, transformers = torch_modules()
    if device not in ("cpu", "cuda"):
        raise InputError(f"device must be cpu or cuda, got {device!r}", field="device")
    if device == "cuda" and not torch.cuda.is_available():
        raise InputError("the installed torch reports no CUDA device", field="device")
    model_class = transformers.SiglipModel if family == "siglip" else transformers.CLIPModel
    try:
        model = model_class.from_pretrained(path, local_files_only=True)
        # The slow image processor: the fast one needs torchvision, which cannot run here.
        image_processor = transformers.AutoImageProcessor.from_pretrained(
            path, local_files_only=True, use_fast=False
        )
        tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise InputError(
            f"cannot load the model: {exc}", file=str(folder), field="checkpoint"
        ) from None
    model.eval().to(device)
    context = int(model.config.text_config.max_position_embeddings)
    dim = int(getattr(model.config, "projection_dim", 0) or model.config.text_config.hidden_size)
    return Encoder(
        model=model,
        image_processor=image_processor,
        tokenizer=tokenizer,
        family=family,
        context_length=context,
        dim=dim,
        device=device,
        preprocessing=preprocessing_of(path),
    )
