from django.conf import settings

from annotation.crowd.base import CrowdProvider
from annotation.crowd.local import LocalProvider
from annotation.crowd.mturk import MTurkProvider
from annotation.crowd.simulated import SimulatedProvider
from pipeline.errors import InputError

PROVIDERS: dict[str, CrowdProvider] = {
    p.name: p for p in (LocalProvider(), SimulatedProvider(), MTurkProvider())
}


def provider_for(name: str) -> CrowdProvider:
    try:
        return PROVIDERS[name]
    except KeyError:
        raise InputError(
            f"unknown crowd provider {name!r}; known: {', '.join(sorted(PROVIDERS))}",
            field="provider",
        ) from None


def web_provider_names() -> list[str]:
    """Providers a page or the API may launch batches on: the simulated crowd only with
    DEBUG on (development, the demo), where it cannot be mistaken for real workers."""
    real = [name for name in PROVIDERS if name != "simulated"]
    return [*real, "simulated"] if settings.DEBUG else real


def web_provider_check(name: str) -> None:
    provider_for(name)  # an unknown name is refused with the known ones
    if name not in web_provider_names():
        raise InputError(
            "the simulated crowd is offered only with DJANGO_DEBUG=1 (development, demo)",
            field="provider",
        )


__all__ = ["PROVIDERS", "CrowdProvider", "provider_for", "web_provider_check", "web_provider_names"]
