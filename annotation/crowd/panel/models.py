"""The panel's own table: who arrived by a study link and accepted the run's information and
consent text."""

from __future__ import annotations

from django.db import models

from annotation.models import Run, Worker


class Participant(models.Model):
    """A panel participant's consent to a run (the version of the text they accepted). The
    id in the study link is their word, not a proof: the session is bound to it, and their
    work counts once the researcher confirms it from the panel's list of approved ids."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="+")
    consent_version = models.CharField(max_length=20)
    consented_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "worker"], name="panel_participant_once")
        ]

    def __str__(self) -> str:
        return f"panel participant {self.worker_id} of run {self.run_id}"
