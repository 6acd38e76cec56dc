"""The one settings module. Everything that differs between machines comes from the environment.

- DATABASE_URL: absent → SQLite under var/ (WAL, IMMEDIATE transactions, busy timeout);
  postgres://… → PostgreSQL.
- REDIS_URL: absent → in-process channel layer; redis://… → the Redis channel layer.
  OPENCLAW_REDIS_PREFIX (default "openclaw"): what its channel groups and task queue are named.
- Q_BROKER: "orm" (default, at-least-once) or "redis" (needs REDIS_URL).
- SECRET_KEY: required with a server DATABASE_URL (production: not sqlite://); on the embedded default a random key is
  made on first start and kept in VAR_DIR/secret_key (mode 0600).
- DEBUG, ALLOWED_HOSTS; OPENCLAW_HTTPS and its companions (Secure cookies, HSTS, SSL redirect).
- OPENCLAW_MODEL_KEY_ENVS, OPENCLAW_OUTBOUND_ALLOW: what a model backend or webhook may use and
  reach (sessions_app/lib/outbound.py; docs/production.md).
"""

import ipaddress
import os
import secrets
import sys
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from openclaw_site import test_workers

BASE_DIR = Path(__file__).resolve().parent.parent
TESTING = "pytest" in sys.modules or (len(sys.argv) > 1 and sys.argv[1] == "test")
if TESTING:
    # A parallel test run's worker: its own var/, Redis database and prefix (test_workers.py).
    test_workers.isolate(os.environ, BASE_DIR / "var")
VAR_DIR = Path(os.environ.get("OPENCLAW_VAR_DIR", BASE_DIR / "var"))
# Where retention's cold storage writes transcripts (session.maintenance.coldStorage).
COLD_STORAGE_DIR = Path(os.environ.get("OPENCLAW_COLD_DIR", VAR_DIR / "cold"))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _env_list(name: str, default: str) -> list[str]:
    return [v.strip() for v in os.environ.get(name, default).split(",") if v.strip()]


def stored_secret_key(path: Path) -> str:
    """The embedded default's key: made once, kept beside the database, readable by its owner
    only. Two processes starting together (web and worker) agree: the file appears whole
    (written aside, then linked into place) and the second one reads the first one's."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    aside = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_urlsafe(50))
    try:
        os.link(aside, path)
    except FileExistsError:
        pass
    finally:
        aside.unlink()
    return path.read_text().strip()


DEBUG = _env_bool("DEBUG", False)
SECRET_KEY = os.environ.get("SECRET_KEY", "").strip()
if not SECRET_KEY:
    _url = os.environ.get("DATABASE_URL", "").strip()
    if _url and not _url.startswith("sqlite") and not TESTING:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. With DATABASE_URL (production mode) set SECRET_KEY to a long "
            "random value, the same for every process, e.g. "
            "python -c 'import secrets; print(secrets.token_urlsafe(50))'"
        )
    SECRET_KEY = stored_secret_key(VAR_DIR / "secret_key")
ALLOWED_HOSTS = [
    h.strip() for h in os.environ.get("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",") if h
]
if TESTING:
    ALLOWED_HOSTS.append("testserver")

INSTALLED_APPS = [
    # (Not "daphne": its app only makes `runserver` serve ASGI, and it loads Twisted, half a
    # second of every process's start. `manage.py serve` is the server; `serve --server
    # daphne` still runs daphne.)
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "django_q",
    "sessions_app",
    "policies_app",
    "openclaw_site",  # its system checks (openclaw_site/checks.py)
]

# Django's stack; the three header-only ones run inline under ASGI (openclaw_site/middleware.py,
# which also serves /api/ and /tools/ with only those three).
MIDDLEWARE = [
    "openclaw_site.middleware.RefuseNulMiddleware",
    "openclaw_site.middleware.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "openclaw_site.middleware.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "openclaw_site.middleware.PageGateMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "openclaw_site.middleware.XFrameOptionsMiddleware",
    "openclaw_site.middleware.ContentSecurityPolicyMiddleware",
]

# --- HTTPS (behind a TLS proxy or not) ------------------------------------------------------
# OPENCLAW_HTTPS=1 says the site is served over HTTPS: cookies are Secure, HSTS is sent and
# plain HTTP is redirected. Each part has its own switch for deployments that need another mix.
HTTPS = _env_bool("OPENCLAW_HTTPS", False)
SESSION_COOKIE_SECURE = _env_bool("OPENCLAW_SECURE_COOKIES", HTTPS)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_SSL_REDIRECT = _env_bool("OPENCLAW_SSL_REDIRECT", HTTPS)
SECURE_HSTS_SECONDS = int(os.environ.get("OPENCLAW_HSTS_SECONDS", 31_536_000 if HTTPS else 0))
SECURE_HSTS_INCLUDE_SUBDOMAINS = _env_bool("OPENCLAW_HSTS_INCLUDE_SUBDOMAINS", HTTPS)
SECURE_HSTS_PRELOAD = _env_bool("OPENCLAW_HSTS_PRELOAD", False)
if _env_bool("OPENCLAW_PROXY_SSL_HEADER", False):
    # Only behind a proxy that sets X-Forwarded-Proto itself (and drops a client's).
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_HTTPONLY = True
# Database sessions whose cookie value is checked before the lookup (sessions_app/access/login_sessions.py).
SESSION_ENGINE = "sessions_app.access.login_sessions"
# The page CSP (openclaw_site/middleware.py): the browser's scripts and styles are files of
# our own (sessions_app/static/ui), images are ours or data: URLs; the admin keeps Django's.
CONTENT_SECURITY_POLICY = os.environ.get(
    "OPENCLAW_CSP",
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; "
    "frame-ancestors 'none'",
)
SILENCED_SYSTEM_CHECKS = [
    # Our SecurityMiddleware and XFrameOptionsMiddleware are subclasses of Django's that
    # Django's checks look for by name; openclaw_site/checks.py recognises them and runs the
    # checks that depend on them (HSTS, SSL redirect, nosniff, X-Frame-Options, ...).
    "security.W001",
    "security.W002",
    # The children index (migration 0024) is a covering index on PostgreSQL; SQLite builds it
    # without the INCLUDE columns, which only costs a table read there. Without this, every
    # command on the embedded default (make run's migrate first) opens with a warning.
    "models.W040",
]
if not SECURE_HSTS_PRELOAD:
    # Preloading is a commitment to HTTPS for the whole domain, a choice for the deployment to
    # make (OPENCLAW_HSTS_PRELOAD=1), not a default.
    SILENCED_SYSTEM_CHECKS.append("security.W021")

ROOT_URLCONF = "openclaw_site.urls"
ASGI_APPLICATION = "openclaw_site.asgi.application"
WSGI_APPLICATION = "openclaw_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
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

# --- Database -------------------------------------------------------------------------------
# stack.md §7.3: without WAL + IMMEDIATE + a busy timeout, the web process and the worker fail
# each other with "database is locked".
SQLITE_OPTIONS = {
    "transaction_mode": "IMMEDIATE",
    "timeout": 20,
    "init_command": "PRAGMA journal_mode=WAL;PRAGMA synchronous=NORMAL;PRAGMA busy_timeout=20000;",
}
DATABASE_URL = os.environ.get("DATABASE_URL", "").strip()
# django-q2's cluster (`manage.py qcluster`, or `manage.py worker`, which supervises one):
# long-lived worker processes, forked.
IN_QCLUSTER = "qcluster" in sys.argv or sys.argv[1:2] == ["worker"]
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=0)}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(VAR_DIR / "db.sqlite3"),
            # A file, not :memory:, so that a worker or server process started by a test sees
            # the same database.
            "TEST": {"NAME": str(VAR_DIR / "test.sqlite3")},
        }
    }
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    DATABASES["default"].setdefault("OPTIONS", {}).update(SQLITE_OPTIONS)
elif (
    DATABASES["default"]["ENGINE"].endswith("postgresql")
    and os.environ.get("DB_POOL", "1") != "0"
    # django-q2 forks its workers: a pool opened in the cluster process would hand the same
    # sockets to several processes. Workers keep one connection each instead (below).
    and not IN_QCLUSTER
):
    # A new PostgreSQL connection costs ~9 ms here; under ASGI the psycopg pool (not
    # CONN_MAX_AGE) is the supported way to reuse them (stack.md §4). DB_POOL=0 turns it off.
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": int(os.environ.get("DB_POOL_MAX", "10")),
        # How long a request waits for a free connection before its 503 (short outages are
        # ridden out within it).
        "timeout": float(os.environ.get("DB_POOL_TIMEOUT", "10")),
    }
    # A pooled connection is checked as it is lent, and a dead one (PostgreSQL restarted)
    # replaces them all without the pool's backoff sleeps (openclaw_site/postgresql/base.py).
    DATABASES["default"]["ENGINE"] = "openclaw_site.postgresql"
if IN_QCLUSTER:
    # A worker runs one task after another: keep its connection instead of opening one per task
    # (on PostgreSQL a new backend costs ~9 ms plus a cold catalog cache, per task). The cluster
    # closes every connection before it forks (django_q.cluster), so none is shared; the health
    # check replaces one that died while the worker was idle.
    DATABASES["default"]["CONN_MAX_AGE"] = 60
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
IS_POSTGRES = DATABASES["default"]["ENGINE"].endswith("postgresql")
if IS_POSTGRES:
    # No JIT on the application's connections (docs/architecture.md, issue 18). Every statement
    # the app sends reads an index range of a page's size and runs in about a millisecond, but
    # JIT is switched on by the planner's *estimated* cost, which a skewed column can inflate
    # past jit_above_cost; compiling then costs 20-1,800 ms per statement, for nothing. Appended
    # to any libpq `options` the DATABASE_URL already carries.
    # No parallel workers either: a Gather starts its workers per execution (~30 ms on a busy
    # 2-core machine, for a statement whose own work is 1 ms: a common-word search in a deep
    # session, BENCHMARKS.md), and concurrent requests, not one statement, use the cores here.
    _pg_options = DATABASES["default"].setdefault("OPTIONS", {})
    _pg_options["options"] = (
        f"{_pg_options.get('options', '')} -c jit=off -c max_parallel_workers_per_gather=0"
    ).strip()
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Channels and the task queue -----------------------------------------------------------
REDIS_URL = os.environ.get("REDIS_URL", "").strip()
# What this deployment's Redis keys and channels begin with (the channel layer's groups, the
# task queue's name): two deployments, or parallel test workers, may share one Redis.
REDIS_PREFIX = os.environ.get("OPENCLAW_REDIS_PREFIX", "openclaw").strip() or "openclaw"
if REDIS_URL:
    # Live-update hints (sessions_app/live) are the only traffic: a group_send is one PUBLISH
    # on a kept connection with the pub/sub layer, where the core layer writes into every
    # member's sorted set. Hints may be lost either way; hubs poll and read the database.
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL], "prefix": REDIS_PREFIX},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

Q_BROKER = os.environ.get("Q_BROKER", "orm").strip().lower()
Q_CLUSTER = {
    "name": REDIS_PREFIX,
    "workers": int(os.environ.get("Q_WORKERS", "2")),
    # stack.md §2.1: timeout must stay below retry, or a long task is handed out twice;
    # max_attempts bounds retries of a task that keeps failing.
    "timeout": 300,
    "retry": 360,
    "max_attempts": 3,
    "catch_up": False,
    # Successful task results are not kept: the Run rows are the record. (With a limit, django-q
    # prunes the oldest result in a transaction that locks every stored one, for each task.)
    # Failures are still stored.
    "save_limit": -1,
    "label": "Task queue",
}
if Q_BROKER == "redis" and REDIS_URL:
    Q_CLUSTER["redis"] = REDIS_URL
else:
    Q_CLUSTER["orm"] = "default"
    # Woken by each enqueue (Redis pub/sub, or the version file beside SQLite's database); it
    # waits itself when the queue is empty, so django-q2's sleep between looks is none.
    Q_CLUSTER["broker_class"] = "sessions_app.runs.broker.WakingORM"
    Q_CLUSTER["poll"] = 0

# --- Outbound requests (sessions_app/lib/outbound.py) ------------------------------------------
# The environment variables a model backend's `apiKeyEnv` may name: provider keys, never the
# deployment's own secrets.
OPENCLAW_MODEL_KEY_ENVS = _env_list(
    "OPENCLAW_MODEL_KEY_ENVS",
    "OPENAI_API_KEY,ANTHROPIC_API_KEY,OPENROUTER_API_KEY,GROQ_API_KEY,MISTRAL_API_KEY,"
    "DEEPSEEK_API_KEY,TOGETHER_API_KEY,GEMINI_API_KEY,XAI_API_KEY",
)
# Non-public destinations (loopback, private, link-local, ...) that backends and webhooks may
# reach: hosts, IPs or CIDRs, `*` for all. The tests' fake model and webhook servers listen on
# 127.0.0.1; processes the tests start inherit the value (tests/servers.py).
OPENCLAW_OUTBOUND_ALLOW = _env_list(
    "OPENCLAW_OUTBOUND_ALLOW", "127.0.0.1,::1,localhost" if TESTING else ""
)


# --- ACP harnesses (sessions_app/acp/harnesses.py) -------------------------------------------
# What an operator's `acp.agents` may run: the deployment decides, not an API key. Each entry of
# OPENCLAW_ACP_COMMANDS is an argv prefix (a program, then any fixed first arguments), entries
# separated by ";": a harness's command and args must begin with one, so an interpreter is
# allowed only with its script. Default: the shipped `echo` harness, run by this Python.
def _acp_commands(raw: str | None) -> list[tuple[str, ...]]:
    import shlex

    if raw is None:
        return [(sys.executable, str(BASE_DIR / "sessions_app" / "acp_agents" / "echo.py"))]
    return [tuple(shlex.split(entry)) for entry in raw.split(";") if entry.strip()]


OPENCLAW_ACP_COMMANDS = _acp_commands(os.environ.get("OPENCLAW_ACP_COMMANDS"))
# The environment variables a harness's `env` may pass on: locale and the model provider keys
# above, never the deployment's own secrets (SECRET_KEY, DATABASE_URL, ...).
OPENCLAW_ACP_ENV = _env_list(
    "OPENCLAW_ACP_ENV",
    ",".join(["HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", *OPENCLAW_MODEL_KEY_ENVS]),
)

# Who a harness process runs as (sessions_app/acp/sandbox.py): `auto` (a user of its own per
# working directory when the worker is root; otherwise refused in production mode, run as the
# worker's user on the embedded SQLite default), `uid` (always a user of its own), `none` (the
# worker's user: every allowed harness can read the worker's environment and files).
OPENCLAW_ACP_SANDBOX = os.environ.get("OPENCLAW_ACP_SANDBOX", "auto")
# The uids (and gids) handed to harness working directories, one each, never twice.
OPENCLAW_ACP_UIDS = os.environ.get("OPENCLAW_ACP_UIDS", "2000000000-2000999999")
# Where a harness with `sessionTools` reaches this service's MCP server (/mcp/): the worker
# hands it this URL with a key for the turn (sessions_app/acp/session_tools.py). Loopback, or a
# host OPENCLAW_OUTBOUND_ALLOW names (over https): the key goes nowhere else. `manage.py serve`
# gives its worker the address it serves on; a worker started on its own defaults to PORT.
OPENCLAW_MCP_URL = os.environ.get(
    "OPENCLAW_MCP_URL", f"http://127.0.0.1:{os.environ.get('PORT', '8000')}/mcp/"
)

# import_openclaw: a transcript line longer than this is reported and skipped (docs/import.md).
IMPORT_MAX_LINE_BYTES = int(os.environ.get("OPENCLAW_IMPORT_MAX_LINE_BYTES", 16 * 1024 * 1024))

# --- Auth, i18n, static ---------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS: list[dict[str, object]] = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
# The transcript browser logs people in at /accounts/login/ and lands on the session list.
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", VAR_DIR / "media"))

# Request bodies: sessions_spawn attachments may reach 5 MiB of content (base64 grows it by a
# third), so the ceiling sits above that; anything larger is refused with 413.
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("MAX_BODY_BYTES", 8 * 1024 * 1024))

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["sessions_app.api.drf.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["sessions_app.api.drf.FastJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["sessions_app.api.drf.StrictJSONParser"],
    "EXCEPTION_HANDLER": "sessions_app.api.drf.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
    # No `?format=`: a query parameter the API does not know is a 400 naming it, like any other.
    "URL_FORMAT_OVERRIDE": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "openclaw-sessions API",
    "DESCRIPTION": (
        "OpenClaw's session tools as a service. Authenticate with `Authorization: Bearer <api key>`."
    ),
    "VERSION": "1",
    # JSON Schema 2020-12 throughout, as the tools' declarations and MCP are written.
    "OAS_VERSION": "3.1.0",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        # /tools/invoke and the async views (send, runs), which DRF cannot see, and the
        # components the tools' declarations give.
        "sessions_app.api.schema.add_plain_views",
    ],
    "TAGS": [
        {"name": "tools", "description": "OpenClaw's /tools/invoke: every tool by name."},
        {"name": "sessions", "description": "Sessions, transcripts, sends and spawns."},
        {"name": "runs", "description": "Agent runs: read, wait for, abort."},
        {"name": "agents", "description": "Agents."},
        {"name": "config", "description": "Gateway settings."},
        {"name": "policies", "description": "The send policy (session.sendPolicy)."},
    ],
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    # Swagger UI from the installed sidecar package, not a CDN: nothing external at run time.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}

# --- Access limits (issue 16): API rate and concurrency per key, login throttling, JSON depth,
# password rules. sessions_app/api/ratelimit.py, sessions_app/access/login_throttle.py,
# sessions_app/lib/jsondepth.py; docs/production.md. 0 turns a limit off.
# Rows read in one pass (issue 26): a page's JSON cells decoded in one call, the list's message
# previews read by plain SQL. Off: the plain path, row by row, which returns the same values (the
# tests compare the two on one store); kept as the reference, not as a tuning knob.
OPENCLAW_FAST_ROWS = _env_bool("OPENCLAW_FAST_ROWS", True)
OPENCLAW_API_RATE_LIMIT = int(os.environ.get("OPENCLAW_API_RATE_LIMIT", "20000"))
OPENCLAW_API_RATE_WINDOW_SECONDS = int(os.environ.get("OPENCLAW_API_RATE_WINDOW_SECONDS", "60"))
OPENCLAW_API_CONCURRENCY_LIMIT = int(os.environ.get("OPENCLAW_API_CONCURRENCY_LIMIT", "64"))
# Requests at once, per web process, whose credential has not authenticated there yet (the
# ASGI door, sessions_app/api/door.py): a flood of distinct bad keys costs at most this many
# key lookups at a time.
OPENCLAW_API_UNCHECKED_LIMIT = int(os.environ.get("OPENCLAW_API_UNCHECKED_LIMIT", "32"))
# A request finding one of those counts full waits at the door this long for a place (when
# fewer wait than the count has places), then 429.
OPENCLAW_API_QUEUE_SECONDS = float(os.environ.get("OPENCLAW_API_QUEUE_SECONDS", "5"))
# Threads per web process for the database steps of the async API views (openclaw_site/
# middleware.ApiHandler): long-lived, shared by their requests (each step hands its connection
# back), instead of a new thread per request.
OPENCLAW_API_THREADS = int(os.environ.get("OPENCLAW_API_THREADS", "32"))
# Pages, the admin, the browser and static files (everything the door above does not see):
# requests in flight per web process in each of three counts (no session cookie, a cookie not
# yet seen signed in, a signed-in user's); the next is a 429 before Django
# (openclaw_site/page_gate.py). 0 turns it off.
OPENCLAW_PAGE_CONCURRENCY_LIMIT = int(os.environ.get("OPENCLAW_PAGE_CONCURRENCY_LIMIT", "8"))
# Per source (the client's address; sessions_app/access/source_limit.py): after this many failed
# API-key checks from one address in a window, keys not yet served by a process are refused
# from there before any lookup until the window ends; and one address holds at most
# OPENCLAW_SOURCE_UNCHECKED_LIMIT of the door's unchecked places and OPENCLAW_SOURCE_PAGE_LIMIT of
# each of the pages' gate's counts for strangers. Per web process.
OPENCLAW_SOURCE_AUTH_FAILURES = int(os.environ.get("OPENCLAW_SOURCE_AUTH_FAILURES", "20"))
OPENCLAW_SOURCE_WINDOW_SECONDS = int(os.environ.get("OPENCLAW_SOURCE_WINDOW_SECONDS", "60"))
OPENCLAW_SOURCE_UNCHECKED_LIMIT = int(os.environ.get("OPENCLAW_SOURCE_UNCHECKED_LIMIT", "8"))
OPENCLAW_SOURCE_PAGE_LIMIT = int(os.environ.get("OPENCLAW_SOURCE_PAGE_LIMIT", "4"))
OPENCLAW_LOGIN_FAILURES = int(os.environ.get("OPENCLAW_LOGIN_FAILURES", "5"))
OPENCLAW_LOGIN_LOCKOUT_SECONDS = int(os.environ.get("OPENCLAW_LOGIN_LOCKOUT_SECONDS", "900"))
# The proxies whose X-Forwarded-For is believed (IPs or CIDRs, comma-separated): a request from
# one is keyed by the right-most address of that header outside them (sessions_app/lib/
# client_address.py), so a proxy on another host does not make every user one address.
OPENCLAW_TRUSTED_PROXIES = _env_list("OPENCLAW_TRUSTED_PROXIES", "")
for _proxy in OPENCLAW_TRUSTED_PROXIES:
    try:
        ipaddress.ip_network(_proxy, strict=False)
    except ValueError:
        raise ImproperlyConfigured(
            f"OPENCLAW_TRUSTED_PROXIES: {_proxy!r} is not an IP address or CIDR"
        ) from None
# The cache the counters live in: local memory (per process) unless CACHES names a shared one.
OPENCLAW_LIMITS_CACHE = os.environ.get("OPENCLAW_LIMITS_CACHE", "default")
OPENCLAW_MAX_JSON_DEPTH = int(os.environ.get("OPENCLAW_MAX_JSON_DEPTH", "64"))


def _env_seconds(name: str, default: float, *, whole: bool = False) -> float:
    """A positive number of seconds from the environment, or a start-time error naming it (a
    typo here would otherwise end live runs or never end dead ones, silently)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw) if whole else float(raw)
    except ValueError:
        value = 0
    if not 0 < value < float("inf"):  # (also refuses nan)
        kind = "a whole number of seconds" if whole else "a number of seconds"
        raise ImproperlyConfigured(f"{name} must be {kind} above 0 (got {raw!r})")
    return value


# --- Runs surviving failures (docs/reliability.md "Reliability"; sessions_app/runs/) ---------
# A running run's worker stamps its heartbeat this often; the watchdog thread of every worker
# looks every RUN_WATCH_SECONDS and ends a run whose heartbeat is RUN_DEAD_AFTER_SECONDS old
# (its worker died), and enqueues again a queued run left unclaimed for RUN_ORPHAN_AFTER_SECONDS
# (its task was lost). The minute sweep is the backstop, after RUN_HEARTBEAT_TIMEOUT_SECONDS and
# RUN_REQUEUE_AFTER_SECONDS. A run rides out a database outage for up to RUN_DB_OUTAGE_SECONDS.
RUN_HEARTBEAT_SECONDS = _env_seconds("RUN_HEARTBEAT_SECONDS", 2)
RUN_WATCH_SECONDS = _env_seconds("RUN_WATCH_SECONDS", 2)
RUN_DEAD_AFTER_SECONDS = int(_env_seconds("RUN_DEAD_AFTER_SECONDS", 10, whole=True))
RUN_ORPHAN_AFTER_SECONDS = int(_env_seconds("RUN_ORPHAN_AFTER_SECONDS", 10, whole=True))
RUN_HEARTBEAT_TIMEOUT_SECONDS = int(_env_seconds("RUN_HEARTBEAT_TIMEOUT_SECONDS", 60, whole=True))
RUN_REQUEUE_AFTER_SECONDS = int(_env_seconds("RUN_REQUEUE_AFTER_SECONDS", 120, whole=True))
RUN_DB_OUTAGE_SECONDS = _env_seconds("RUN_DB_OUTAGE_SECONDS", 30)
# A live run misses a beat now and then (a slow query, a pause): judging it dead after less
# than two beats would end runs whose worker is fine.
for _judge in ("RUN_DEAD_AFTER_SECONDS", "RUN_HEARTBEAT_TIMEOUT_SECONDS"):
    if globals()[_judge] < 2 * RUN_HEARTBEAT_SECONDS:
        raise ImproperlyConfigured(
            f"{_judge} ({globals()[_judge]}) must be at least twice RUN_HEARTBEAT_SECONDS "
            f"({RUN_HEARTBEAT_SECONDS}), or runs whose worker is alive are ended as dead"
        )

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": 12},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
