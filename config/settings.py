"""Settings. The environment is read here and nowhere else.

With nothing set, the app runs on embedded defaults: a SQLite file, Celery tasks run
in-process, files on local disk. Tests and production set DATABASE_URL (PostgreSQL) and
CELERY_BROKER_URL (Redis).
"""

import os
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent
env = os.environ.get

DEBUG = env("DJANGO_DEBUG", "1") == "1"
SECRET_KEY = env("DJANGO_SECRET_KEY", "dev-only-insecure-key-set-DJANGO_SECRET_KEY-in-production")
ALLOWED_HOSTS = [
    h for h in env("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver").split(",") if h
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "annotation",
    # Dataset flows, each a folder over the core (see docs/architecture.md).
    "annotation.flows.bison",
    "annotation.flows.eccv",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "frontend" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

VAR_DIR = Path(env("CROWDVL_VAR_DIR", str(BASE_DIR / "var")))
if "DATABASE_URL" not in os.environ:
    VAR_DIR.mkdir(parents=True, exist_ok=True)  # the embedded SQLite file lives here
DATABASES = {
    "default": dj_database_url.parse(
        env("DATABASE_URL", f"sqlite:///{VAR_DIR / 'crowdvl.sqlite3'}"), conn_max_age=0
    )
}
if "TEST_DATABASE_NAME" in os.environ:
    # A Celery worker started by the tests must use the database the test run created.
    DATABASES["default"]["NAME"] = os.environ["TEST_DATABASE_NAME"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS: list[dict] = []
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "frontend" / "static"]
STATIC_ROOT = VAR_DIR / "static"
MEDIA_ROOT = Path(env("CROWDVL_MEDIA_ROOT", str(VAR_DIR / "media")))
MEDIA_URL = "media/"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.BasicAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAdminUser"],
}

# Celery: without a broker, tasks run in-process (the embedded default).
CELERY_BROKER_URL = env("CELERY_BROKER_URL", "")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_DEFAULT_QUEUE = env("CELERY_QUEUE", "crowdvl")

# MTurk (credentials come from the standard AWS chain, never from settings).
CROWDVL_MTURK_ENV = env("CROWDVL_MTURK_ENV", "sandbox")
CROWDVL_MTURK_BUDGET = env("CROWDVL_MTURK_BUDGET") or None  # dollars; unset = no budget
CELERY_BEAT_SCHEDULE = {
    "mturk-sync": {
        "task": "mturk.sync_open",
        "schedule": float(env("CROWDVL_MTURK_SYNC_SECONDS", "300")),
    }
}

# Stage 1 splits its nearest-neighbour work into subtasks of this many query images.
CROWDVL_STAGE1_BLOCK = int(env("CROWDVL_STAGE1_BLOCK", "4096"))
# Where the local crowd provider's worker pages are reached (used in printed links).
CROWDVL_PUBLIC_URL = env("CROWDVL_PUBLIC_URL", "http://127.0.0.1:8000")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "annotation": {"handlers": ["console"], "level": env("CROWDVL_LOG_LEVEL", "WARNING")}
    },
}
