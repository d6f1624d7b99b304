"""A service's refusal shown on a console form, the same way on every page."""

from __future__ import annotations

from django import forms

from annotation.paths import paths_hidden_but
from pipeline.errors import InputError


def form_refusal(form: forms.Form, exc: Exception, *, prefix: str = "") -> None:
    """Next to the field the error names (`prefix`: how the form names it, e.g. a run's
    settings are `config_<name>`), otherwise above the form with its whole message (the
    server's paths hidden: a refusal may quote a stored file; a folder the user typed in the
    form is quoted as typed)."""
    typed = [v for v in form.data.values() if isinstance(v, str)] if form.is_bound else []
    key = f"{prefix}{exc.field}" if isinstance(exc, InputError) and exc.field else None
    if key is not None and key in form.fields:
        form.add_error(key, paths_hidden_but(exc.message, typed=typed))  # type: ignore[attr-defined]
    else:
        form.add_error(None, paths_hidden_but(str(exc), typed=typed))
