"""Stored embeddings: one set per (project, dataset, model, checkpoint sha256, preprocessing).

A set belongs to the project it was encoded for (issue 47): datasets are shared, but a set is
what a project's runs read, so only that project's members see, use or delete it."""

from __future__ import annotations

from django.db import models

from annotation.models import Dataset, Job, Project


class EmbeddingState(models.TextChoices):
    BUILDING = "building", "Building"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


class EmbeddingSet(models.Model):
    """A dataset's images and captions encoded by one model. The file
    (MEDIA_ROOT/embeddings/<dataset id>/<set id>.npz) holds `image_ids`, `image_embeddings`,
    `caption_ids`, `caption_embeddings` (unit rows), the layout ECCV and CxC read."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="embedding_sets")
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="embedding_sets")
    library = models.CharField(max_length=40, default="transformers")
    family = models.CharField(max_length=20)  # clip | siglip
    model_name = models.CharField(max_length=200)
    checkpoint = models.CharField(max_length=500, help_text="as given, inside CROWDVL_IMPORT_DIR")
    checkpoint_sha256 = models.CharField(max_length=64)
    checkpoint_format = models.CharField(max_length=20, default="transformers")
    preprocessing = models.JSONField(default=dict)
    preprocessing_sha256 = models.CharField(max_length=64)
    license = models.CharField(max_length=200, blank=True)
    source = models.CharField(max_length=500, blank=True, help_text="where the weights came from")
    dtype = models.CharField(max_length=10, default="float32")
    dim = models.IntegerField(default=0)
    device = models.CharField(max_length=10, default="cpu")
    state = models.CharField(
        max_length=20, choices=EmbeddingState.choices, default=EmbeddingState.BUILDING
    )
    file = models.CharField(max_length=300, blank=True, help_text="relative to MEDIA_ROOT")
    size_bytes = models.BigIntegerField(default=0)
    counts = models.JSONField(default=dict, blank=True)
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=[
                    "project",
                    "dataset",
                    "model_name",
                    "checkpoint_sha256",
                    "preprocessing_sha256",
                ],
                name="embedding_set_once_per_project",
            )
        ]

    def __str__(self) -> str:
        return f"{self.label} on {self.dataset_id} ({self.state})"

    @property
    def label(self) -> str:
        """Model name and checkpoint hash: how proposals, exports and reports name it."""
        return f"{self.model_name}@{self.checkpoint_sha256[:12]}"


class EmbeddingSetUse(models.Model):
    """A run that read a set (an ECCV annotator, CxC's sampling job, quality scores): deleting
    the set is refused while one exists, unless forced (issue 47)."""

    embedding_set = models.ForeignKey(EmbeddingSet, on_delete=models.CASCADE, related_name="uses")
    run = models.ForeignKey("annotation.Run", on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["embedding_set", "run"], name="embedding_set_use_once")
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} used set {self.embedding_set_id}"
