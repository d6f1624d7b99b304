"""ECCV's tables (Annotator, Proposal, ExternalPositive) moved here from the core in state
only (issue 26): their tables keep the names the core's migrations gave them, no row moves."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("annotation", "0023_neutral_run_statuses"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Annotator",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("name", models.CharField(max_length=100)),
                        (
                            "kind",
                            models.CharField(
                                choices=[
                                    (
                                        "fasttext",
                                        "Built in: FastText bag of words over co-captions",
                                    ),
                                    (
                                        "minilm",
                                        "Built in: all-MiniLM-L6-v2 sentence encoder over co-captions",
                                    ),
                                    ("embeddings", "Imported image and caption embeddings (.npz)"),
                                    ("rankings", "Imported ranked lists (.json)"),
                                ],
                                max_length=20,
                            ),
                        ),
                        ("source", models.CharField(blank=True, max_length=500)),
                        ("params", models.JSONField(blank=True, default=dict)),
                        (
                            "run",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="annotators",
                                to="annotation.run",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "annotation_annotator",
                    },
                ),
                migrations.CreateModel(
                    name="ExternalPositive",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("source", models.CharField(max_length=40)),
                        ("score", models.FloatField(blank=True, null=True)),
                        (
                            "caption",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="annotation.caption",
                            ),
                        ),
                        (
                            "image",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="annotation.image",
                            ),
                        ),
                        (
                            "run",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="external_positives",
                                to="annotation.run",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "annotation_externalpositive",
                    },
                ),
                migrations.CreateModel(
                    name="Proposal",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        (
                            "direction",
                            models.CharField(
                                choices=[("i2t", "image to text"), ("t2i", "text to image")],
                                max_length=3,
                            ),
                        ),
                        ("rank", models.PositiveSmallIntegerField()),
                        (
                            "annotator",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="proposals",
                                to="eccv.annotator",
                            ),
                        ),
                        (
                            "item",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="proposals",
                                to="annotation.item",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "annotation_proposal",
                    },
                ),
                migrations.AddConstraint(
                    model_name="annotator",
                    constraint=models.UniqueConstraint(
                        fields=("run", "name"), name="annotator_name"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="externalpositive",
                    constraint=models.UniqueConstraint(
                        fields=("run", "source", "image", "caption"), name="external_positive_once"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="proposal",
                    constraint=models.UniqueConstraint(
                        fields=("item", "annotator", "direction"), name="proposal_once"
                    ),
                ),
            ],
            database_operations=[],
        ),
    ]
