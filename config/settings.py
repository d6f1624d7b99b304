"""Settings. The environment is read here and nowhere else.

With nothing set, the app runs on embedded defaults: a SQLite file, Celery tasks run
in-process, files on local disk. Tests and production set DATABASE_URL (PostgreSQL) and
CELERY_BROKER_URL (Redis).
"""

import os
import secrets
import sys
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.env import env_renamed

BASE_DIR = Path(__file__).resolve().parent.parent
env = os.environ.get


def env_flag(name: str, default: bool) -> bool:
    value = env(name)
    if value is None or value == "":
        return default
    if value not in ("0", "1"):
        raise ImproperlyConfigured(f"{name} must be 0 or 1, got {value!r}")
    return value == "1"


# Off unless explicitly on (`make demo`/`make serve` and the tests turn it on).
DEBUG = env_flag("DJANGO_DEBUG", False)
# The test process itself (processes the tests start get their settings from the environment).
TESTING = "pytest" in sys.modules
EMBEDDED = "DATABASE_URL" not in os.environ
# A deployment: off DEBUG, on a real database, not under test. Secure defaults apply.
PRODUCTION = not DEBUG and not EMBEDDED and not TESTING

VAR_DIR = Path(env("CROWDVL_VAR_DIR", str(BASE_DIR / "var")))
if EMBEDDED:
    VAR_DIR.mkdir(parents=True, exist_ok=True)  # the embedded SQLite file lives here


def _embedded_secret_key() -> str:
    """A random key created once per embedded installation (var/secret_key, owner-only)."""
    path = VAR_DIR / "secret_key"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(50))
    return path.read_text().strip()


# The key signs sessions, CSRF tokens and the MTurk page's form tokens: never a known string
# outside development and tests.
SECRET_KEY = env("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if DEBUG or TESTING:
        SECRET_KEY = "insecure-development-and-test-key-never-used-in-production"
    elif EMBEDDED:
        SECRET_KEY = _embedded_secret_key()
    else:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY is not set. Set it to a long random string (e.g. "
            "python -c 'import secrets; print(secrets.token_urlsafe(50))'), or set "
            "DJANGO_DEBUG=1 for development only."
        )
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
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "annotation",
    # Crowd providers, each a folder over the core (see docs/architecture.md).
    "annotation.crowd.local",
    "annotation.crowd.simulated",
    "annotation.crowd.mturk",
    "annotation.crowd.prolific",
    "annotation.crowd.panel",
    # Image-text encoders (CLIP, SigLIP): stored embeddings the flows read.
    "annotation.encoders",
    # Dataset flows, each a folder over the core (see docs/architecture.md).
    "annotation.flows.bison",
    "annotation.flows.eccv",
    "annotation.flows.cxc",
    "annotation.flows.quality",
]

MIDDLEWARE = [
    # A worker's GET of their task page, answered through the hooks it needs of the middleware
    # below, in their order, with the same checks and headers (lean_path.py states its gain).
    "annotation.crowd.local.lean_path.TaskPageMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # NUL or invalid UTF-8 in a URL: 404 before any view or session lookup (not a 500).
    "annotation.middleware.BadBytesMiddleware",
    # Static files in every mode, without a separate web server (collected in the image).
    "whitenoise.middleware.WhiteNoiseMiddleware",
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
                "annotation.money.currency_context",
            ],
        },
    },
]

# Persistent connections (seconds; 0 opens one per request) with a health check before reuse,
# so a restarted PostgreSQL costs one failed check, not a failed request.
DATABASES = {
    "default": dj_database_url.parse(
        env("DATABASE_URL", f"sqlite:///{VAR_DIR / 'crowdvl.sqlite3'}"),
        conn_max_age=int(env("CROWDVL_DB_CONN_MAX_AGE", "60")),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"].endswith("postgresql") and env_flag(
    "CROWDVL_DB_SERVER_SIDE_BINDING", True
):
    # Parameters bound by the server, so psycopg prepares a statement run 5 times on one
    # connection: the worker pages' queries are then planned once per connection, not per
    # request (planning cost more than running them).
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        server_side_binding=True,
        prepare_threshold=5,  # Django's default turns preparing off
    )
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # The embedded default serves a small lab's workers at once: WAL lets pages read while
    # one request writes; every transaction takes the write lock when it begins (a deferred
    # one that reads, then writes, fails at once with "database is locked" when another
    # writer got in between); and a writer waits for the lock instead of failing.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        transaction_mode="IMMEDIATE",
        timeout=int(env("CROWDVL_SQLITE_BUSY_SECONDS", "30")),
        init_command="PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    )
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
STATIC_ROOT = Path(env("DJANGO_STATIC_ROOT", str(VAR_DIR / "static")))
# Deployments serve the files `collectstatic` gathered; elsewhere they are found where they are.
WHITENOISE_USE_FINDERS = not PRODUCTION or env_flag("CROWDVL_STATIC_FINDERS", False)
if WHITENOISE_USE_FINDERS:
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns when it is missing

# --- HTTPS and cookies: on by default in a deployment, each overridable -------------------
# Behind a TLS-terminating proxy, e.g. DJANGO_SECURE_PROXY_SSL_HEADER=HTTP_X_FORWARDED_PROTO.
_proxy_header = env("DJANGO_SECURE_PROXY_SSL_HEADER", "")
if _proxy_header:
    SECURE_PROXY_SSL_HEADER = (_proxy_header, "https")
_public = env("CROWDVL_PUBLIC_URL", "http://127.0.0.1:8000").rstrip("/")
# Forms posted from the public address pass CSRF behind a proxy (Django checks the Origin).
CSRF_TRUSTED_ORIGINS = [
    o
    for o in env(
        "DJANGO_CSRF_TRUSTED_ORIGINS", _public if _public.startswith("https://") else ""
    ).split(",")
    if o
]
SECURE_SSL_REDIRECT = env_flag("DJANGO_SECURE_SSL_REDIRECT", PRODUCTION)
SESSION_COOKIE_SECURE = env_flag("DJANGO_SESSION_COOKIE_SECURE", PRODUCTION)
CSRF_COOKIE_SECURE = env_flag("DJANGO_CSRF_COOKIE_SECURE", PRODUCTION)
SECURE_HSTS_SECONDS = int(env("DJANGO_SECURE_HSTS_SECONDS", str(31_536_000 if PRODUCTION else 0)))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_flag("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", PRODUCTION)
SECURE_HSTS_PRELOAD = env_flag("DJANGO_SECURE_HSTS_PRELOAD", PRODUCTION)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"  # the MTurk page opts out for MTurk's frame only
MEDIA_ROOT = Path(env("CROWDVL_MEDIA_ROOT", str(VAR_DIR / "media")))
MEDIA_URL = "media/"
# The only server folder the API may import a COCO file from by `path` (uploads need none).
CROWDVL_IMPORT_DIR = Path(env("CROWDVL_IMPORT_DIR", str(VAR_DIR / "import")))
# A local_dir dataset's images are read only from under CROWDVL_IMPORT_DIR or one of these
# folders (colon-separated), so an import cannot make the server serve any file it can read.
CROWDVL_IMAGE_DIRS = [Path(p) for p in env("CROWDVL_IMAGE_DIRS", "").split(":") if p]
# Hosts the server may fetch images from (comma-separated; "*.example.org" for its subdomains);
# empty: any host whose every address is public. Loopback, private, link-local (cloud metadata)
# and other non-public addresses are refused whatever this says (annotation/services/fetch_guard).
CROWDVL_IMAGE_HOSTS = [
    h.strip().lower() for h in env("CROWDVL_IMAGE_HOSTS", "").split(",") if h.strip()
]
# Non-public addresses an image server may still have (comma-separated: 10.0.0.5, 10.1.0.0/16,
# 127.0.0.1:8765 for one port, [fd00::5]:80): a lab's own server. Empty (the default) in
# production; tests name their own loopback server's port here.
CROWDVL_FETCH_ALLOW_PRIVATE = [
    a.strip() for a in env("CROWDVL_FETCH_ALLOW_PRIVATE", "").split(",") if a.strip()
]
# Largest file a page or the API keeps from an upload (a dataset, a model's embeddings: a
# 512-d model of 10x val2014 is 4.6 GB). Cap the request body at the proxy as well.
CROWDVL_MAX_UPLOAD_MB = int(env("CROWDVL_MAX_UPLOAD_MB", "8192"))

# Researchers, reviewers and viewers are not staff: they sign in here, not in the admin.
LOGIN_URL = "login"
# Django's password check with the sign-in throttle in front (annotation/auth_backend.py).
AUTHENTICATION_BACKENDS = ["annotation.auth_backend.ThrottledModelBackend"]
# Sign-in throttle (annotation/services/access/logins.py): failures of a username from one address,
# or from one address across usernames, within the window lock that pair (or address) for the
# lock time (0: no limit); past ACCOUNT_FAILURES from any address, a username is slowed (an
# address that failed on it waits, doubling up to SLOW_MAX seconds), never locked.
# `manage.py login_unlock` and the admin's sign-in throttle page clear.
CROWDVL_LOGIN_ACCOUNT_FAILURES = int(env("CROWDVL_LOGIN_ACCOUNT_FAILURES", "5"))
CROWDVL_LOGIN_ADDRESS_FAILURES = int(env("CROWDVL_LOGIN_ADDRESS_FAILURES", "20"))
CROWDVL_LOGIN_WINDOW_SECONDS = int(env("CROWDVL_LOGIN_WINDOW_SECONDS", "900"))
CROWDVL_LOGIN_LOCK_SECONDS = int(env("CROWDVL_LOGIN_LOCK_SECONDS", "900"))
CROWDVL_LOGIN_SLOW_MAX_SECONDS = int(env("CROWDVL_LOGIN_SLOW_MAX_SECONDS", "60"))
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"  # signed out: back to the sign-in page

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Scripts: `Authorization: Token <key>` (manage.py api_token <user>). First, so a
        # request without credentials gets 401 with `WWW-Authenticate: Token`, not 403.
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.BasicAuthentication",
    ],
    "DEFAULT_SCHEMA_CLASS": "annotation.api.schema.ServiceSchema",
    # Staff as before; project members by role (annotation/permissions.py).
    "DEFAULT_PERMISSION_CLASSES": ["annotation.permissions.ProjectPermission"],
    # Every refusal as JSON with `error`, a too-large body (413) included.
    "EXCEPTION_HANDLER": "annotation.api.errors.api_exception_handler",
    "DEFAULT_PARSER_CLASSES": [
        "annotation.api.parsers.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
}

SPECTACULAR_SETTINGS = {
    "TITLE": "crowdvl API",
    "DESCRIPTION": "Launch and follow crowdsourcing runs for vision-and-language evaluation "
    "data (COCO-BISON, ECCV Caption, CxC, caption quality). Errors: 400 names the file, "
    "record and field; 403 a refused permission or pool; 409 a state that forbids the call.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    # One enum per vocabulary of annotation/models.py, however many operations use it (a
    # batch's stage: the registered stages, named StageEnum by its field).
    "ENUM_NAME_OVERRIDES": {
        "RunKindEnum": "annotation.models.RunKind",
        "RunStatusEnum": "annotation.models.RunStatus",
        "BatchStatusEnum": "annotation.models.BatchStatus",
        "JobStateEnum": "annotation.models.JobState",
        "ReviewStatusEnum": "annotation.models.ReviewStatus",
    },
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # The schema and its docs page for signed-in users only (see CROWDVL_PUBLIC_API_DOCS).
    "SERVE_PERMISSIONS": ["annotation.permissions.ApiDocsPermission"],
}
# 1: /api/schema/ and /api/docs/ open to anonymous visitors too.
CROWDVL_PUBLIC_API_DOCS = env_flag("CROWDVL_PUBLIC_API_DOCS", False)

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
if CELERY_BROKER_URL.startswith("filesystem://"):
    # `make serve`'s broker: messages are files under var/broker/, so the embedded default
    # runs a real worker and the beat scheduler with no server to install.
    _BROKER_DIR = VAR_DIR / "broker"
    for _folder in ("queue", "processed"):
        (_BROKER_DIR / _folder).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_BROKER_DIR / "queue"),
        "data_folder_out": str(_BROKER_DIR / "queue"),
        "processed_folder": str(_BROKER_DIR / "processed"),
        "store_processed": False,
    }
    CELERY_WORKER_ENABLE_REMOTE_CONTROL = False  # no broadcast on plain files

# The crowd provider a batch goes to when none is named (the CLI, the API).
CROWDVL_DEFAULT_PROVIDER = env("CROWDVL_DEFAULT_PROVIDER", "local")
# Spend limits over every paid crowd provider (dollars; unset = none): a per-batch budget, and
# the money committed per rolling 24 hours (HITs, added assignments, bonuses, with fees).
CROWDVL_BUDGET = env_renamed("CROWDVL_BUDGET", "CROWDVL_MTURK_BUDGET") or None
CROWDVL_DAILY_CAP = env_renamed("CROWDVL_DAILY_CAP", "CROWDVL_MTURK_DAILY_CAP") or None
# The minimum expected hourly pay (dollars) a batch may publish at a paid provider (ECCV
# Caption's target).
CROWDVL_MIN_HOURLY_PAY = env("CROWDVL_MIN_HOURLY_PAY", "15.00")
# How an ECCV run's imported embeddings (.npz annotators) are held while a proposal part
# ranks them: "float32" (as given), or "float16" (unit rows, half the memory, products still
# summed in float32; a 512-d model at 10x val2014 then fits a 4 GB worker).
CROWDVL_ECCV_EMBEDDING_STORAGE = env("CROWDVL_ECCV_EMBEDDING_STORAGE", "float32")
# Export jobs run steps beside each other on a second thread (services/release/beside.py): faster on
# two or more cores, with the temporaries of two steps held at once. Off: one step at a time
# (less peak memory for a small worker).
CROWDVL_EXPORT_BESIDE = env_flag("CROWDVL_EXPORT_BESIDE", True)
# The currency of every amount this installation stores (rewards, bonuses, budget, daily cap,
# the hourly minimum): a paid provider whose account holds another currency is refused, never
# converted.
CROWDVL_CURRENCY = env("CROWDVL_CURRENCY", "USD").upper()
# Prolific (the paid crowd): an API token of the workspace, its id and the project studies go
# to; the hook secret signs Prolific's webhooks (POST /hooks/secrets/ for the workspace).
CROWDVL_PROLIFIC_TOKEN = env("CROWDVL_PROLIFIC_TOKEN", "")
CROWDVL_PROLIFIC_API_URL = env("CROWDVL_PROLIFIC_API_URL", "https://api.prolific.com/api/v1/")
CROWDVL_PROLIFIC_WORKSPACE = env("CROWDVL_PROLIFIC_WORKSPACE", "")
CROWDVL_PROLIFIC_PROJECT = env("CROWDVL_PROLIFIC_PROJECT", "")
CROWDVL_PROLIFIC_HOOK_SECRET = env("CROWDVL_PROLIFIC_HOOK_SECRET", "")
# Prolific's service fee on rewards and bonuses (33.3 % academic, 42.8 % corporate, as its
# pricing page says) and VAT on that fee (0 outside the UK/EU).
CROWDVL_PROLIFIC_FEE_RATE = env("CROWDVL_PROLIFIC_FEE_RATE", "0.333")
CROWDVL_PROLIFIC_VAT_RATE = env("CROWDVL_PROLIFIC_VAT_RATE", "0")
# Publishing an export (annotation/publish/): the Hugging Face Hub and Zenodo, each with the
# researcher's own token (never logged or printed); the endpoints may point at a mirror, a
# sandbox (https://sandbox.zenodo.org) or a test stand-in.
CROWDVL_HF_TOKEN = env("HF_TOKEN", "")
CROWDVL_HF_ENDPOINT = env("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
CROWDVL_ZENODO_TOKEN = env("ZENODO_TOKEN", "")
CROWDVL_ZENODO_URL = env("ZENODO_URL", "https://zenodo.org").rstrip("/")
# MTurk (legacy; credentials come from the standard AWS chain, never from settings).
CROWDVL_MTURK_ENV = env("CROWDVL_MTURK_ENV", "sandbox")
CELERY_BEAT_SCHEDULE = {
    # Every remote provider's open batches brought in (CrowdProvider.sync_open).
    "crowd-sync": {
        "task": "crowd.sync_open",
        "schedule": float(
            env_renamed("CROWDVL_SYNC_SECONDS", "CROWDVL_MTURK_SYNC_SECONDS") or "300"
        ),
    },
    # Approval policies (holds for review) first, then auto-approval of local work.
    "auto-approve": {
        "task": "assignments.auto_approve",
        "schedule": float(env("CROWDVL_AUTO_APPROVE_SECONDS", "600")),
    },
    # Jobs whose worker died or whose messages were lost get their missing steps re-sent.
    "jobs-recover": {
        "task": "jobs.recover",
        "schedule": float(env("CROWDVL_JOB_RECOVER_SECONDS", "60")),
    },
}

# Requests that would write rows, per minute (0: no limit): anonymous ones per client address;
# a task page's saves of answers in progress per worker (one after each change, debounced);
# new participants by a panel's study link per client address and per batch (its link).
CROWDVL_RATE_LIMITS = {
    "mturk-post": int(env("CROWDVL_MTURK_POSTS_PER_MINUTE", "60")),
    "draft-save": int(env("CROWDVL_DRAFT_SAVES_PER_MINUTE", "120")),
    "panel-arrival": int(env("CROWDVL_PANEL_ARRIVALS_PER_MINUTE", "20")),
    "panel-batch-arrival": int(env("CROWDVL_PANEL_BATCH_ARRIVALS_PER_MINUTE", "200")),
}
# How long a claim under an unconfirmed id (a panel's study link) that nobody answered on keeps
# its slot from a new arrival who finds no other (services/work/holds.py).
CROWDVL_IDLE_HOLD_SECONDS = int(env("CROWDVL_IDLE_HOLD_SECONDS", "120"))
# The header a trusted reverse proxy puts the client's address in (e.g. HTTP_X_REAL_IP).
CROWDVL_CLIENT_IP_HEADER = env("CROWDVL_CLIENT_IP_HEADER", "")
# A cache shared by every server process (rate limits): Redis when configured.
_cache_url = env("CROWDVL_CACHE_URL", "")
CACHES = {
    "default": (
        # django-redis keeps one client per process; Django's RedisCache builds a redis-py
        # client per operation, half of a session read's CPU (benchmarks/cache_backend.py).
        {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": _cache_url}
        if _cache_url
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    ),
    # Per process, for what never changes once written (a HIT's questions as a worker sees
    # them): no round trip, nothing to invalidate.
    "local": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "crowdvl-local",
        "OPTIONS": {"MAX_ENTRIES": 5000},  # a few kB each
    },
    # Per process, the objects themselves (not pickled): a worker's task page rendered once
    # per HIT, with compiled template nodes for the parts that vary (pages/work/shell.py).
    "shells": {
        "BACKEND": "config.memory_cache.ObjectMemoryCache",
        "LOCATION": "crowdvl-shells",
        "OPTIONS": {"MAX_ENTRIES": 2000},  # 5-30 kB each
    },
    # Per process, what never changes about an assignment whose task page was shown (its HIT,
    # batch, stage, run: selectors/work/task_page.py), so its later views read only what can change.
    "assignments": {
        "BACKEND": "config.memory_cache.ObjectMemoryCache",
        "LOCATION": "crowdvl-assignments",
        "OPTIONS": {"MAX_ENTRIES": 20000},  # ~0.3 kB each
    },
}
CROWDVL_CACHE_SHARED = bool(_cache_url)  # HIT views and questions also go there (hit_cache)
# With a shared cache, sessions are read from it (written through to the database): a worker
# page then needs no session query. A per-process cache would serve stale sessions.
SESSION_ENGINE = (
    "django.contrib.sessions.backends.cached_db"
    if _cache_url
    else "django.contrib.sessions.backends.db"
)

# Stage 1 splits its nearest-neighbour work into subtasks of this many query images.
CROWDVL_STAGE1_BLOCK = int(env("CROWDVL_STAGE1_BLOCK", "4096"))
# The similarity rows a stage-1 subtask holds at once (MB): with the image matrix, a worker's
# whole memory, whatever the number of images (val2014 stays within it at its full width).
CROWDVL_STAGE1_MEMORY_MB = int(env("CROWDVL_STAGE1_MEMORY_MB", "512"))
# A running step writes its job's heartbeat this often; a pending or running job with no sign of
# life for CROWDVL_JOB_STALL_SECONDS is resumed by the periodic `jobs.recover`.
CROWDVL_JOB_HEARTBEAT_SECONDS = float(env("CROWDVL_JOB_HEARTBEAT_SECONDS", "15"))
CROWDVL_JOB_STALL_SECONDS = float(env("CROWDVL_JOB_STALL_SECONDS", "120"))
# How long a command waits for its job before giving up (the job itself keeps running).
CROWDVL_JOB_WAIT_SECONDS = float(env("CROWDVL_JOB_WAIT_SECONDS", "3600"))
# Where the local crowd provider's worker pages are reached (used in printed links).
CROWDVL_PUBLIC_URL = _public
# Unset, worker links follow the host a page was served from (the default above is for
# commands, which have no request).
CROWDVL_PUBLIC_URL_SET = bool(env("CROWDVL_PUBLIC_URL"))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain"},
        "mail_admins": {
            "class": "django.utils.log.AdminEmailHandler",
            "level": "ERROR",
            "filters": ["require_debug_false"],
        },
    },
    "filters": {"require_debug_false": {"()": "django.utils.log.RequireDebugFalse"}},
    "loggers": {
        "annotation": {"handlers": ["console"], "level": env("CROWDVL_LOG_LEVEL", "WARNING")},
        # Server errors leave a traceback in the server's log whatever DEBUG says (Django's
        # default prints them only with DEBUG on), and are mailed to ADMINS when set.
        "django.request": {
            "handlers": ["console", "mail_admins"],
            "level": "ERROR",
            "propagate": False,
        },
    },
}
# Outgoing mail: server errors to ADMINS, a run's owner on a completed batch or a failed job.
# Without CROWDVL_EMAIL_HOST mail is printed to the log (console backend), never lost silently.
EMAIL_HOST = env("CROWDVL_EMAIL_HOST", "")
EMAIL_BACKEND = (
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend"
)
EMAIL_PORT = int(env("CROWDVL_EMAIL_PORT", "587"))
EMAIL_HOST_USER = env("CROWDVL_EMAIL_USER", "")
EMAIL_HOST_PASSWORD = env("CROWDVL_EMAIL_PASSWORD", "")
EMAIL_USE_TLS = env_flag("CROWDVL_EMAIL_TLS", True)
DEFAULT_FROM_EMAIL = SERVER_EMAIL = env("CROWDVL_EMAIL_FROM", "crowdvl@localhost")
# "Name <email>,Name <email>": who is mailed server errors (needs EMAIL_* settings).
ADMINS = [
    tuple(part.strip().rstrip(">").split("<", 1))
    for part in env("CROWDVL_ADMINS", "").split(",")
    if "<" in part
]
