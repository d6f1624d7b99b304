"""Settings of the separate bare app with a session (`benchmarks/worker_load.py`): the bare app
(`bare_settings.py`) plus what any worker page with a form needs of Django, the session read
from the same shared cache as the app's (cached_db: the same store, key and signature, so it
reads the app's own worker sessions) and a CSRF token. Its ratio to the bare app is the most
any such page can reach through Django's public APIs on this machine."""

import os

from benchmarks.bare_settings import *  # noqa: F403

ROOT_URLCONF = "benchmarks.bare_session_urls"
INSTALLED_APPS = ["django.contrib.sessions", "rest_framework"]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
]
# As the app's (config/settings.py): behind the shared cache when there is one.
if os.environ.get("CROWDVL_CACHE_URL"):
    SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
    CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": os.environ["CROWDVL_CACHE_URL"],
        }
    }
else:
    SESSION_ENGINE = "django.contrib.sessions.backends.db"
