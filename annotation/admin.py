"""Admin: read-mostly views of runs, jobs (with progress), batches and the event log. Settings
edited here pass the same checks as the CLI and the API; states change through services only."""

from typing import Any

from django import forms
from django.contrib import admin

from annotation import models
from annotation.services.checks import (
    check_batch_counts,
    check_batch_times,
    check_name,
    check_reward,
)
from annotation.services.runs.runs import run_check_config
from pipeline.errors import InputError


def _field_error(form: forms.ModelForm, exc: InputError, default: str) -> None:
    field = (exc.field or default).split(".")[0]
    form.add_error(field if field in form.fields else None, str(exc))


class RunForm(forms.ModelForm):
    class Meta:
        model = models.Run
        fields = ["project", "name", "config"]

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        try:
            check_name(data.get("name", ""))
            kind = self.instance.kind
            data["config"] = run_check_config(kind=kind, config=data.get("config") or {})
        except InputError as exc:
            self.add_error("name" if exc.field == "name" else "config", str(exc))
        return data


class BatchForm(forms.ModelForm):
    class Meta:
        model = models.Batch
        fields = [
            "title",
            "description",
            "keywords",
            "reward",
            "lifetime_seconds",
            "assignment_duration_seconds",
            "auto_approval_delay_seconds",
            "qualifications",
            "options",
        ]

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        data = {
            "items_per_hit": self.instance.items_per_hit,
            "assignments_per_hit": self.instance.assignments_per_hit,
            **cleaned,
        }
        try:
            cleaned["reward"] = check_reward(data.get("reward"))
            check_batch_counts(
                items_per_hit=data.get("items_per_hit"),
                assignments_per_hit=data.get("assignments_per_hit"),
            )
            check_batch_times(
                lifetime_seconds=data.get("lifetime_seconds"),
                assignment_duration_seconds=data.get("assignment_duration_seconds"),
                auto_approval_delay_seconds=data.get("auto_approval_delay_seconds"),
                options=data.get("options") or {},
            )
        except InputError as exc:
            _field_error(self, exc, "options")
        return cleaned


@admin.register(models.Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["name", "image_source", "source_file", "created_at"]


@admin.register(models.Run)
class RunAdmin(admin.ModelAdmin):
    form = RunForm
    readonly_fields = ["status", "kind", "dataset", "embedding_dim", "embedding_source"]
    list_display = [
        "id",
        "project",
        "kind",
        "name",
        "dataset",
        "status",
        "embedding_dim",
        "created_at",
    ]
    list_filter = ["project", "kind", "status"]


class ProjectMembershipInline(admin.TabularInline):
    model = models.ProjectMembership
    extra = 1
    autocomplete_fields = ["user"]


@admin.register(models.Project)
class ProjectAdmin(admin.ModelAdmin):
    """Projects and their members; a run's project is chosen on the run."""

    list_display = ["name", "description", "created_at"]
    search_fields = ["name"]
    inlines = [ProjectMembershipInline]


@admin.register(models.ProjectMembership)
class ProjectMembershipAdmin(admin.ModelAdmin):
    list_display = ["project", "user", "role", "created_at"]
    list_filter = ["project", "role"]
    search_fields = ["project__name", "user__username"]
    autocomplete_fields = ["user"]


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
    form = BatchForm
    readonly_fields = [
        "run",
        "stage",
        "provider",
        "status",
        "items_per_hit",
        "assignments_per_hit",
        "seed",
        "environment",
        "published_at",
        "sync_error",
        "provider_hit_type_id",
    ]
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


@admin.register(models.Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ["id", "run", "label", "worker", "consent_version", "consented_at", "revoked_at"]
    list_filter = ["run"]
    search_fields = ["label"]
    readonly_fields = [f.name for f in models.Invitation._meta.fields]


@admin.register(models.LoginThrottle)
class LoginThrottleAdmin(admin.ModelAdmin):
    """The sign-in throttle's counts and locks (issue 47): staff see who is locked or slowed,
    and clear a row with the "Clear" action (as `manage.py login_unlock`)."""

    list_display = ["scope", "key", "failures", "window_start", "locked_until"]
    list_filter = ["scope"]
    search_fields = ["key"]
    ordering = ["-locked_until", "-window_start"]
    readonly_fields = [f.name for f in models.LoginThrottle._meta.fields]
    actions = ["clear"]

    def has_add_permission(self, request: Any) -> bool:
        return False  # rows are counts of failed sign-ins, never typed in

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False  # cleared through the action, which records who cleared it

    @admin.action(description="Clear (unlock) the selected sign-in counts")
    def clear(self, request: Any, queryset: Any) -> None:
        from annotation.services.access.logins import login_throttle_clear

        cleared = login_throttle_clear(
            ids=list(queryset.values_list("pk", flat=True)), by=request.user.get_username()
        )
        self.message_user(request, f"Cleared {cleared} sign-in count(s).")
