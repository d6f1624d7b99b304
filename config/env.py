"""Reading the environment where a setting was renamed: the new name wins, the old one is still
read (with a deprecation warning) so an installation keeps working across the rename."""

from __future__ import annotations

import os
import warnings


class SettingRenamed(DeprecationWarning):
    """An environment variable was set under its old name."""


# Shown every time, not only under -W: an operator reads it in the server's log.
warnings.simplefilter("always", SettingRenamed)


def env_renamed(new: str, old: str) -> str | None:
    """The value of `new`, else of `old` with a warning naming both; None when neither is set."""
    value = os.environ.get(new)
    if value:
        return value
    legacy = os.environ.get(old)
    if legacy:
        warnings.warn(
            f"{old} is deprecated and will stop being read: set {new} instead",
            SettingRenamed,
            stacklevel=2,
        )
        return legacy
    return None
