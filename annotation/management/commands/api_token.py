from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError, CommandParser
from rest_framework.authtoken.models import Token

from annotation.management.base import ServiceCommand


class Command(ServiceCommand):
    help = (
        "The API token of a user (created on first use): scripts send "
        "`Authorization: Token <key>`. --rotate replaces it (the old one stops working)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--rotate", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        user = get_user_model().objects.filter(username=opts["username"]).first()
        if user is None:
            raise CommandError(f"no user named {opts['username']!r}")
        if opts["rotate"]:
            Token.objects.filter(user=user).delete()
        token, _ = Token.objects.get_or_create(user=user)
        self.stdout.write(token.key)
