"""Settings of the server `benchmarks/worker_load.py` starts: the app's own settings as a
deployment gets them (DEBUG off, persistent connections), plus a bare DRF endpoint to compare
against, served over plain HTTP on 127.0.0.1."""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "benchmarks.load_urls"
SECURE_SSL_REDIRECT = False
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
SECURE_HSTS_SECONDS = 0
