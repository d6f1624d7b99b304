"""Mail to a run's owner when something they wait for happens (a batch completed) or needs
them (a job failed). Queued after the commit as a Celery task, so a worker's submit that
completes a batch never waits on a mail server; no owner or no address: nothing is sent."""

from __future__ import annotations

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction

from annotation.models import EventAction, Run
from annotation.services.events import event_record


def owner_notify(*, run_id: int | None, subject: str, body: str) -> None:
    """Queue the mail (sent once the current transaction commits)."""
    if run_id is None:
        return
    from annotation import tasks  # tasks import services: import here

    transaction.on_commit(lambda: tasks.owner_notify_task.delay(run_id, subject, body))


def owner_notify_send(*, run_id: int, subject: str, body: str) -> bool:
    """Send the mail to the run's owner; True if one was sent."""
    run = Run.objects.select_related("owner").filter(pk=run_id).first()
    if run is None or run.owner is None or not run.owner.email:
        return False
    link = f"{settings.CROWDVL_PUBLIC_URL.rstrip('/')}/" if settings.CROWDVL_PUBLIC_URL else ""
    send_mail(
        subject=f"[crowdvl] {subject}",
        message=f"{body}\n\nRun {run.pk} ({run.get_kind_display()}, {run.name or 'unnamed'})."
        + (f"\n{link}" if link else ""),
        from_email=None,  # DEFAULT_FROM_EMAIL
        recipient_list=[run.owner.email],
    )
    event_record(action=EventAction.OWNER_NOTIFIED, run=run, data={"subject": subject})
    return True
