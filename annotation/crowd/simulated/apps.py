from django.apps import AppConfig


class SimulatedCrowdConfig(AppConfig):
    """The simulated crowd (offered on pages and the API only with DEBUG on)."""

    name = "annotation.crowd.simulated"
    label = "crowd_simulated"
    verbose_name = "Simulated crowd"

    def ready(self) -> None:
        from annotation.crowd.simulated.provider import SimulatedProvider
        from annotation.providers import provider_register

        provider_register(SimulatedProvider())
