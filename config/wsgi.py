import os

from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
handler: WSGIHandler = get_wsgi_application()
application = handler

# The worker's task page GET answered ahead of the handler's machinery (issue 32), where the
# lean path is in the settings' middleware; every other request is the handler's.
if "annotation.crowd.local.lean_path.TaskPageMiddleware" in settings.MIDDLEWARE:
    from annotation.crowd.local.lean_entry import task_page_entry

    application = task_page_entry(handler)  # type: ignore[assignment]
