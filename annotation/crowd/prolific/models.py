"""Prolific's own state: each webhook event taken in (its X-Event-ID, once), the studies
Prolific reported for a high return rate, work it completed that cannot count here, and
statuses this code does not know (each kept once)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from annotation.models import EXTERNAL_ID_LENGTH, Assignment, Batch


class HookOutcome(models.TextChoices):
    APPLIED = "applied", "applied"  # its status was applied (whether or not it changed anything)
    STALE = "stale", "stale"  # older than a status already applied to the same submission
    UNMATCHED = "unmatched", "unmatched"  # no assignment or batch here for its resource
    UNKNOWN = "unknown", "unknown"  # a status this code does not know (kept as an event)
    IGNORED = "ignored", "ignored"  # an event type this code does not handle


class HookDelivery(models.Model):
    """One event Prolific delivered, by its X-Event-ID (the same on every retry). Written in
    the transaction that applies the event: a crash leaves no row, so Prolific's retry applies
    it; a second copy at the same time waits on the unique id and then finds it."""

    event_id = models.CharField(max_length=EXTERNAL_ID_LENGTH, unique=True)
    event_type = models.CharField(max_length=60)
    resource_id = models.CharField(max_length=EXTERNAL_ID_LENGTH, db_index=True)
    status = models.CharField(max_length=40, blank=True)
    # X-Timestamp (UNIX seconds): Prolific does not guarantee order.
    sent_at = models.FloatField(null=True, blank=True)
    outcome = models.CharField(max_length=20, choices=HookOutcome.choices)
    received_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.event_type} {self.event_id} ({self.outcome})"


class HighReturnRate(models.Model):
    """Prolific's `study.has_high_return_rate` for a batch's study: the batch page warns."""

    batch = models.OneToOneField(Batch, on_delete=models.CASCADE, related_name="+")
    first_at = models.DateTimeField()
    last_at = models.DateTimeField()
    reports = models.PositiveIntegerField(default=1)

    def __str__(self) -> str:
        return f"high return rate on batch {self.batch_id}"


class RefusedSubmission(models.Model):
    """Work Prolific completed that cannot count here (the HIT is full, the participant had
    these items before), once per assignment: for the researcher to reject at Prolific."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="+")
    error = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"refused submission of assignment {self.assignment_id}"


class UnknownStatus(models.Model):
    """A submission status this code does not know, kept once per submission and status."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="+")
    submission_id = models.CharField(max_length=EXTERNAL_ID_LENGTH)
    status = models.CharField(max_length=40)
    source = models.CharField(max_length=20, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["batch", "submission_id", "status"], name="prolific_unknown_status_once"
            )
        ]

    def __str__(self) -> str:
        return f"status {self.status} of submission {self.submission_id}"
