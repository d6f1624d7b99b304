from django.apps import AppConfig


class EncodersConfig(AppConfig):
    """Image-text models (CLIP, SigLIP) in the loop: a dataset's images and captions encoded
    once per (model, checkpoint, preprocessing), reused by ECCV, CxC and caption quality."""

    name = "annotation.encoders"
    label = "encoders"
    verbose_name = "Image-text encoders"

    def ready(self) -> None:
        from annotation.services.jobs.job_recovery import JobSteps, job_steps_register

        job_steps_register(
            JobSteps(
                name="encoders.encode",
                start="encoders.encode_prepare",
                part="encoders.encode_part",
                finish="encoders.encode_finish",
            )
        )
