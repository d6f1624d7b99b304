"""A service's refusal shown on a console form, the same way on every page."""

from __future__ import annotations

from collections.abc import Mapping

from django import forms

from annotation.errors import page_message
from annotation.paths import paths_hidden_but
from pipeline.errors import InputError


def form_refusal(
    form: forms.Form, exc: Exception, *, prefix: str = "", fields: Mapping[str, str] | None = None
) -> None:
    """Next to the field the error names (`prefix`: how the form names it, e.g. a run's
    settings are `config_<name>`), otherwise above the form with its whole message (the
    server's paths hidden: a refusal may quote a stored file; a folder the user typed in the
    form is quoted as typed). `fields`: the form's field for a service's parameter where their
    names differ. The refusal is in the page's words (`page_message`), not the command line's."""
    typed = [v for v in form.data.values() if isinstance(v, str)] if form.is_bound else []
    field = exc.field if isinstance(exc, InputError) else None
    key = f"{prefix}{(fields or {}).get(field, field)}" if field else None
    if isinstance(exc, InputError) and key is not None and key in form.fields:
        form.add_error(key, paths_hidden_but(exc.page or exc.message, typed=typed))
    else:
        form.add_error(None, paths_hidden_but(page_message(exc), typed=typed))
