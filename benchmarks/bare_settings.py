"""Settings of the separate bare app `benchmarks/worker_load.py` serves beside the app (issue
32): Django and DRF with nothing else, no middleware, no sessions, no templates; one view
reading one row of the app's database (`benchmarks/bare_urls.py`). The database connection is
set up as the app's is (persistent, health-checked, server-side binding), so the difference
measured is the app's own work."""

import os

import dj_database_url

DEBUG = False
SECRET_KEY = os.environ["DJANGO_SECRET_KEY"]
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "benchmarks.bare_urls"
INSTALLED_APPS = ["rest_framework"]
MIDDLEWARE: list[str] = []
USE_TZ = True
DATABASES = {
    "default": dj_database_url.parse(
        os.environ["DATABASE_URL"],
        conn_max_age=int(os.environ.get("CROWDVL_DB_CONN_MAX_AGE", "60")),
        conn_health_checks=True,
    )
}
DATABASES["default"].setdefault("OPTIONS", {}).update(server_side_binding=True, prepare_threshold=5)
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "UNAUTHENTICATED_USER": None,  # no django.contrib.auth
}
