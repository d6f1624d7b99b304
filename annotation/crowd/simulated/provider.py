from __future__ import annotations

from typing import Any

from annotation.providers.base import ServerSideProvider


class SimulatedProvider(ServerSideProvider):
    """Batches answered by the simulated crowd (`crowd.py` here): HITs are rows here and no
    call leaves the server."""

    name = "simulated"
    label = "Simulated crowd (marked in every export)"
    simulated = True

    def simulate(self, **options: Any) -> Any:
        from annotation.crowd.simulated.crowd import simulate_crowd

        return simulate_crowd(**options)
