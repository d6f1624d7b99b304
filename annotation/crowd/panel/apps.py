from django.apps import AppConfig


class PanelCrowdConfig(AppConfig):
    """Participants sent by a panel's study link: consent, the task pages, completion codes,
    confirmation from the panel's CSV of approved participants, the bonus CSV."""

    name = "annotation.crowd.panel"
    label = "crowd_panel"
    verbose_name = "Panels (CloudResearch Connect, SONA, participant pools)"

    def ready(self) -> None:
        from annotation.crowd import provider_register
        from annotation.crowd.panel.provider import PanelProvider

        provider_register(PanelProvider())
