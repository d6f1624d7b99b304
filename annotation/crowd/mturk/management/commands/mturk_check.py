from typing import Any

from annotation.crowd.mturk.spend import mturk_provider
from annotation.management.base import ServiceCommand


class Command(ServiceCommand):
    help = "Show the MTurk endpoint in use and the account balance (nothing is changed)."

    def handle(self, *args: Any, **opts: Any) -> None:
        provider = mturk_provider()
        gateway = provider.gateway
        self.stdout.write(f"endpoint: {gateway.endpoint}")
        self.stdout.write(f"balance:  ${provider.account_balance()}")
