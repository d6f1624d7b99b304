from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.management.base import ServiceCommand
from annotation.services.access.logins import login_unlock


class Command(ServiceCommand):
    help = (
        "Clear the sign-in throttle's failures and lock of a username and/or a client address "
        "(so nobody can lock a researcher out for good)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username", nargs="?")
        parser.add_argument("--address", help="a client address, e.g. 192.0.2.7")

    def handle(self, *args: Any, **opts: Any) -> None:
        if not opts["username"] and not opts["address"]:
            raise CommandError("name a username, an --address or both")
        cleared = login_unlock(username=opts["username"], address=opts["address"])
        self.stdout.write(f"cleared {cleared} sign-in counts")
