from __future__ import annotations

from annotation.crowd.base import ServerSideProvider


class SimulatedProvider(ServerSideProvider):
    """Batches answered by the simulated crowd (`annotation.simulation`): HITs are rows here
    and no call leaves the server."""

    name = "simulated"
