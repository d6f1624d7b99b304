"""A model's name as users give it (issue 47). It labels runs, exports and reports and, made
a slug by `path_component`, names files: refused here when it could read as a path."""

from __future__ import annotations

import unicodedata

from pipeline.errors import InputError

MAX_LENGTH = 200


def model_name_check(name: str) -> str:
    """`name` stripped, or InputError (field model_name) for a name over MAX_LENGTH, with a
    control character or a backslash, or whose "/"-separated parts include an empty one,
    "." or "..". A Hugging Face id such as "openai/clip-vit-base-patch32" is valid."""
    name = name.strip()
    if len(name) > MAX_LENGTH:
        raise InputError(f"longer than {MAX_LENGTH} characters ({len(name)})", field="model_name")
    if any(unicodedata.category(c)[0] == "C" for c in name):
        raise InputError("must not contain control characters", field="model_name")
    if "\\" in name:
        raise InputError("must not contain a backslash", field="model_name")
    if name and any(part in ("", ".", "..") for part in name.split("/")):
        raise InputError(
            'must not start or end with "/", hold "//", or have a "." or ".." part; '
            'a Hugging Face id such as "openai/clip-vit-base-patch32" is fine',
            field="model_name",
        )
    return name
