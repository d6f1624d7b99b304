"""ECCV Caption's tables: the machine annotators, their proposals and positives from other
benchmarks. Their rows were made when the core held every table: the state moved here in
issue 26 (`migrations.SeparateDatabaseAndState`), the tables kept their names, so nothing on
disk changed."""

from __future__ import annotations

from django.db import models


class AnnotatorKind(models.TextChoices):
    FASTTEXT = "fasttext", "Built in: FastText bag of words over co-captions"
    MINILM = "minilm", "Built in: all-MiniLM-L6-v2 sentence encoder over co-captions"
    EMBEDDINGS = "embeddings", "Imported image and caption embeddings (.npz)"
    RANKINGS = "rankings", "Imported ranked lists (.json)"
    IMAGE_TEXT = "image_text", "Image-text model (stored encoder embeddings)"


class Annotator(models.Model):
    """A machine annotator (retrieval model) proposing candidates in an ECCV run."""

    run = models.ForeignKey("annotation.Run", on_delete=models.CASCADE, related_name="annotators")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=20, choices=AnnotatorKind.choices)
    source = models.CharField(max_length=500, blank=True)
    params = models.JSONField(default=dict, blank=True)

    class Meta:
        db_table = "annotation_annotator"  # made by the core's migrations; moved in state only
        constraints = [models.UniqueConstraint(fields=["run", "name"], name="annotator_name")]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"


class Proposal(models.Model):
    """Provenance of a candidate: which model proposed it, for which query direction, at
    which rank (1-based)."""

    item = models.ForeignKey("annotation.Item", on_delete=models.CASCADE, related_name="proposals")
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="proposals")
    direction = models.CharField(
        max_length=3, choices=[("i2t", "image to text"), ("t2i", "text to image")]
    )
    rank = models.PositiveSmallIntegerField()

    class Meta:
        db_table = "annotation_proposal"  # made by the core's migrations; moved in state only
        constraints = [
            models.UniqueConstraint(fields=["item", "annotator", "direction"], name="proposal_once")
        ]

    def __str__(self) -> str:
        return f"{self.annotator_id} {self.direction} rank {self.rank}"


class ExternalPositive(models.Model):
    """A positive pair from another benchmark (e.g. CxC) merged in as a further source."""

    run = models.ForeignKey(
        "annotation.Run", on_delete=models.CASCADE, related_name="external_positives"
    )
    source = models.CharField(max_length=40)
    image = models.ForeignKey("annotation.Image", on_delete=models.CASCADE, related_name="+")
    caption = models.ForeignKey("annotation.Caption", on_delete=models.CASCADE, related_name="+")
    score = models.FloatField(null=True, blank=True)

    class Meta:
        db_table = (
            "annotation_externalpositive"  # made by the core's migrations; moved in state only
        )
        constraints = [
            models.UniqueConstraint(
                fields=["run", "source", "image", "caption"], name="external_positive_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.source} positive ({self.image_id}, {self.caption_id})"
