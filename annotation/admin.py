"""Admin: read-mostly views of runs, jobs (with progress), batches and the event log."""

from django.contrib import admin

from annotation import models


@admin.register(models.Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["name", "image_source", "source_file", "created_at"]


@admin.register(models.Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "name", "dataset", "status", "embedding_dim", "created_at"]
    list_filter = ["kind", "status"]


@admin.register(models.Job)
class JobAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "name",
        "run",
        "state",
        "progress",
        "message",
        "created_at",
        "finished_at",
    ]
    list_filter = ["name", "state"]
    readonly_fields = [f.name for f in models.Job._meta.fields]


@admin.register(models.Batch)
class BatchAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "run",
        "stage",
        "provider",
        "status",
        "items_per_hit",
        "assignments_per_hit",
        "reward",
    ]
    list_filter = ["stage", "provider", "status"]


@admin.register(models.Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "hit",
        "worker",
        "state",
        "confirmed",
        "excluded",
        "accepted_at",
        "submitted_at",
    ]
    list_filter = ["state", "confirmed", "excluded"]


@admin.register(models.Worker)
class WorkerAdmin(admin.ModelAdmin):
    list_display = ["id", "provider", "external_id", "blocked"]
    search_fields = ["external_id"]


@admin.register(models.Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "action", "run", "batch", "assignment", "worker"]
    list_filter = ["action"]
    readonly_fields = [f.name for f in models.Event._meta.fields]


@admin.register(models.Export)
class ExportAdmin(admin.ModelAdmin):
    list_display = ["id", "run", "format", "version", "path", "checksum", "created_at"]
    readonly_fields = [f.name for f in models.Export._meta.fields]
