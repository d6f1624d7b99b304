"""The registry of crowd providers. Each provider is a package `annotation/crowd/<name>/` and a
Django app whose `AppConfig.ready()` calls `provider_register` (see CONTRIBUTING.md,
"Adding a crowd provider"). The core and the flows ask this registry; they never name a provider.
"""

from __future__ import annotations

from django.conf import settings

from annotation.providers.base import CostEstimate, CrowdProvider, LaunchNote
from pipeline.errors import InputError

PROVIDERS: dict[str, CrowdProvider] = {}


def provider_register(provider: CrowdProvider) -> None:
    """Add a provider (its app's `ready()`); registering the same name twice is a mistake."""
    if provider.name in PROVIDERS and PROVIDERS[provider.name] is not provider:
        raise RuntimeError(f"crowd provider {provider.name!r} is registered twice")
    PROVIDERS[provider.name] = provider


def providers() -> list[CrowdProvider]:
    return list(PROVIDERS.values())


def provider_for(name: str) -> CrowdProvider:
    try:
        return PROVIDERS[name]
    except KeyError:
        raise InputError(
            f"unknown crowd provider {name!r}; known: {', '.join(sorted(PROVIDERS))}",
            field="provider",
        ) from None


def provider_names(**capabilities: bool) -> list[str]:
    """Names of the providers with these capabilities, e.g. `provider_names(remote=True)`."""
    return [
        p.name
        for p in PROVIDERS.values()
        if all(getattr(p, key) == value for key, value in capabilities.items())
    ]


def simulated_crowd() -> CrowdProvider:
    """The provider whose workers are simulated (the demo, quality sweeps, DEBUG pages)."""
    found = [p for p in PROVIDERS.values() if p.simulated]
    if not found:
        raise InputError("no simulated crowd provider is installed", field="provider")
    return found[0]


def web_provider_names() -> list[str]:
    """Providers a page or the API may launch batches on: the simulated crowd only with
    DEBUG on (development, the demo), where it cannot be mistaken for real workers."""
    real = provider_names(simulated=False)
    return [*real, *provider_names(simulated=True)] if settings.DEBUG else real


def web_provider_check(name: str) -> None:
    provider = provider_for(name)  # an unknown name is refused with the known ones
    if name not in web_provider_names():
        raise InputError(
            f"the {provider.name} crowd is offered only with DJANGO_DEBUG=1 (development, demo)",
            field="provider",
        )


__all__ = [
    "PROVIDERS",
    "CostEstimate",
    "CrowdProvider",
    "LaunchNote",
    "provider_for",
    "provider_names",
    "provider_register",
    "providers",
    "simulated_crowd",
    "web_provider_check",
    "web_provider_names",
]
