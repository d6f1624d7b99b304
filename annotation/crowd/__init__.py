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


__all__ = ["PROVIDERS", "CrowdProvider", "provider_for"]
