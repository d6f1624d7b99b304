"""The panel's own tables: who arrived by a study link and accepted the run's information and
consent text, and how each participant's work in a batch ended."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from annotation.models import Batch, Run, Worker


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


class Finish(models.Model):
    """The end of a participant's work in a batch, once per outcome (`options.OUTCOMES` or
    `options.RETURNED`): the batch page counts participants per outcome."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="+")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="+")
    outcome = models.CharField(max_length=40)
    stopped = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["batch", "worker", "outcome"], name="panel_finish_once")
        ]

    def __str__(self) -> str:
        return f"participant {self.worker_id} finished batch {self.batch_id}: {self.outcome}"
