"""The time of each step of a split job (annotation/services/job_timing.py)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0024_flow_tables_moved"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="timings",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
