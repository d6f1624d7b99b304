from typing import Any

from annotation.crowd.prolific.fees import currency, minimum_hourly
from annotation.crowd.prolific.provider import prolific_provider
from annotation.crowd.prolific.spend import workspace_balance
from annotation.management.base import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Check the Prolific settings (nothing is changed): the token's user, the workspace's "
        "currency against CROWDVL_CURRENCY, its available balance and the hourly minimum."
    )

    def handle(self, *args: Any, **opts: Any) -> None:
        client = prolific_provider().client
        me = client.call("GET", "users/me/")
        self.stdout.write(f"token:     valid (user {me.get('id')})")
        theirs, available = workspace_balance(client)
        self.stdout.write(f"workspace: {theirs}, {available} available")
        self.stdout.write(f"minimum:   {currency()} {minimum_hourly()}/h")
        if theirs != currency():
            self.stderr.write(
                f"the workspace holds {theirs}, this installation counts in {currency()} "
                "(CROWDVL_CURRENCY): publishing will be refused"
            )
