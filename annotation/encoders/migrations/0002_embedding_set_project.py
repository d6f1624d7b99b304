import django.db.models.deletion
from django.db import migrations, models

DEFAULT_PROJECT = "Default"  # as annotation.services.projects.DEFAULT_PROJECT, frozen here


def sets_to_default_project(apps, schema_editor):
    """Every set stored before sets had a project goes into "Default" (made if missing), the
    project of runs made without one: staff and its members keep them (issue 47)."""
    Project = apps.get_model("annotation", "Project")
    EmbeddingSet = apps.get_model("encoders", "EmbeddingSet")
    if not EmbeddingSet.objects.filter(project__isnull=True).exists():
        return
    project, _ = Project.objects.get_or_create(
        name=DEFAULT_PROJECT,
        defaults={"description": "Runs created without a project, and all runs made before."},
    )
    EmbeddingSet.objects.filter(project__isnull=True).update(project=project)


class Migration(migrations.Migration):
    dependencies = [
        ("encoders", "0001_initial"),
    ]

    operations = [
        # Nullable first, every existing set into "Default", then NOT NULL.
        migrations.AddField(
            model_name="embeddingset",
            name="project",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="embedding_sets",
                to="annotation.project",
            ),
        ),
        migrations.RunPython(sets_to_default_project, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="embeddingset",
            name="project",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="embedding_sets",
                to="annotation.project",
            ),
        ),
        migrations.RemoveConstraint(model_name="embeddingset", name="embedding_set_once"),
        migrations.AddConstraint(
            model_name="embeddingset",
            constraint=models.UniqueConstraint(
                fields=(
                    "project",
                    "dataset",
                    "model_name",
                    "checkpoint_sha256",
                    "preprocessing_sha256",
                ),
                name="embedding_set_once_per_project",
            ),
        ),
        migrations.CreateModel(
            name="EmbeddingSetUse",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "embedding_set",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="uses",
                        to="encoders.embeddingset",
                    ),
                ),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="annotation.run",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("embedding_set", "run"), name="embedding_set_use_once"
                    )
                ],
            },
        ),
    ]
