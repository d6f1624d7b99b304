"""The installation's currency (CROWDVL_CURRENCY) as people read amounts: every stored amount
is in it, and a provider paying in another currency refuses rather than convert."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest

SYMBOLS = {"USD": "$", "GBP": "£", "EUR": "€"}


def currency_code() -> str:
    return str(settings.CROWDVL_CURRENCY).upper()


def symbol() -> str:
    """ "$", "£", … or the code and a space."""
    code = currency_code()
    return SYMBOLS.get(code, f"{code} ")


def currency_context(request: HttpRequest) -> dict[str, Any]:
    """Templates write `{{ currency }}{{ amount }}`."""
    return {"currency": symbol(), "currency_code": currency_code()}
