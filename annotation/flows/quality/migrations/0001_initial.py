"""Caption quality's Candidate moved here from the core in state only (issue 26): its table
keeps the name the core's migrations gave it, no row moves."""

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
                    name="Candidate",
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
                        ("source", models.CharField(max_length=100)),
                        ("text", models.TextField()),
                        (
                            "image",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="annotation.image",
                            ),
                        ),
                        (
                            "reference",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="annotation.caption",
                            ),
                        ),
                        (
                            "run",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="candidates",
                                to="annotation.run",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "annotation_candidate",
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("run", "image", "source", "text"), name="candidate_once"
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
