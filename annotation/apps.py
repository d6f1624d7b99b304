from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "annotation"
    verbose_name = "Crowd annotation"

    def ready(self) -> None:
        from annotation.services.jobs.job_recovery import JobSteps, job_steps_register

        # The core's single-step jobs: each step is safe to run again.
        for name, task in (
            ("dataset.import", "datasets.import"),
            ("images.cache", "images.cache"),
            ("exports.bundle", "exports.bundle"),
        ):
            job_steps_register(JobSteps(name=name, start=task))
