"""The caption-quality flow's tables. Their rows were made when the core held every table:
the state moved here in issue 26 (`migrations.SeparateDatabaseAndState`), the tables kept
their names, so nothing on disk changed."""

from __future__ import annotations

from django.db import models


class Candidate(models.Model):
    """A caption to be judged for an image: a model's output (`source` = the model's name) or
    a human-written one (`source` = "reference", with the dataset caption it copies)."""

    run = models.ForeignKey("annotation.Run", on_delete=models.CASCADE, related_name="candidates")
    image = models.ForeignKey("annotation.Image", on_delete=models.PROTECT, related_name="+")
    source = models.CharField(max_length=100)
    text = models.TextField()
    reference = models.ForeignKey(
        "annotation.Caption", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )

    class Meta:
        db_table = "annotation_candidate"  # made by the core's migrations; moved in state only
        constraints = [
            models.UniqueConstraint(
                fields=["run", "image", "source", "text"], name="candidate_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.source} caption for image {self.image_id}"
