from typing import Any

from django.core.management.base import CommandParser

from annotation.crowd.panel import options
from annotation.crowd.panel.services import panel_batch_check, panel_settings_set
from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand
from annotation.providers import provider_for


class Command(ServiceCommand):
    help = (
        "Show or change a panel batch's settings: the study link's participant-id parameter, "
        "the panel's name, a completion code per outcome and the completion URL."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("batch", type=record_id)
        parser.add_argument("--id-param", help="e.g. participantId, id, PROLIFIC_PID")
        parser.add_argument("--name", help="the panel's name (ids are unique within a panel)")
        for outcome in options.OUTCOMES:
            parser.add_argument(
                f"--{outcome.replace('_', '-')}-code",
                dest=f"code_{outcome}",
                help=f"the completion code for {options.OUTCOME_LABELS[outcome]} ('' for none)",
            )
        parser.add_argument(
            "--completion-url",
            help="http(s); {code} and {id} are filled in (else code= is added); '' for none",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        batch = self.batch_of(opts["batch"], provider=options.PROVIDER)
        panel_batch_check(batch)
        changes: dict = {}
        for key in ("id_param", "name", "completion_url"):
            if opts[key] is not None:
                changes[key] = opts[key]
        codes = {o: opts[f"code_{o}"] for o in options.OUTCOMES if opts[f"code_{o}"] is not None}
        if codes:
            changes["completion"] = codes
        settings = (
            panel_settings_set(batch=batch, changes=changes)
            if changes
            else options.settings_of(batch)
        )
        batch.refresh_from_db()
        self.stdout.write(f"study link: {provider_for(batch.provider).worker_url(batch=batch)}")
        self.stdout.write(f"panel name: {settings['name'] or '(none)'}")
        for outcome in options.OUTCOMES:
            code = settings["completion"][outcome] or "(no code)"
            self.stdout.write(f"code {options.OUTCOME_LABELS[outcome]}: {code}")
        self.stdout.write(f"completion URL: {settings['completion_url'] or '(none)'}")
