"""The flows own their tables and vocabulary (issue 26). ECCV's Annotator, Proposal and
ExternalPositive and caption quality's Candidate left the core's state for the flows' apps
(`eccv` and `quality` 0001 take them over, same table names): state only, nothing on disk
changes. `Item.candidate`/`candidate2` now name `quality.Candidate` (same column, same
table, same constraint). The stage and item-kind columns lose their choices: their values
and labels come from the flow registry; the stored values stay."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0023_neutral_run_statuses"),
        ("eccv", "0001_initial"),
        ("quality", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="item",
                    name="candidate",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="quality.candidate",
                    ),
                ),
                migrations.AlterField(
                    model_name="item",
                    name="candidate2",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="quality.candidate",
                    ),
                ),
                migrations.DeleteModel(name="Proposal"),
                migrations.DeleteModel(name="Annotator"),
                migrations.DeleteModel(name="ExternalPositive"),
                migrations.DeleteModel(name="Candidate"),
            ],
            database_operations=[],
        ),
        migrations.AlterField(
            model_name="batch", name="stage", field=models.CharField(max_length=40)
        ),
        migrations.AlterField(
            model_name="item", name="kind", field=models.CharField(max_length=20)
        ),
        migrations.AlterField(
            model_name="poolmembership", name="stage", field=models.CharField(max_length=40)
        ),
        migrations.AlterField(
            model_name="poolqualification", name="stage", field=models.CharField(max_length=40)
        ),
    ]
