from typing import Any

from annotation.management.base import ServiceCommand
from annotation.selectors.installation import installation_id
from annotation.services.access.installation import installation_regenerate


class Command(ServiceCommand):
    help = (
        "Give this database a new installation id (after restoring or copying it), so its "
        "MTurk tokens and qualification names never collide with the original's."
    )

    def handle(self, *args: Any, **opts: Any) -> None:
        old = installation_id()
        new = installation_regenerate()
        self.stdout.write(f"installation id {old} -> {new}")
