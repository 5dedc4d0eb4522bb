"""Django settings of agentgym's forum: Misago, every tenant from one server (see tenancy.py).

Configured from the environment by ForumSite: FORUM_HOME (static/media/run files), FORUM_DB_HOST
(the PostgreSQL socket folder), FORUM_DB_NAME (the database management commands use; requests
pick their tenant's database from the Host), FORUM_HOST_SUFFIX (``forum.localhost``).
"""

import os
from pathlib import Path

from misago.settings import *  # noqa: F403 (Misago's INSTALLED_APPS and context processors)
from misago.settings import INSTALLED_APPS, TEMPLATE_CONTEXT_PROCESSORS

HOME = Path(os.environ["FORUM_HOME"])
HOST_SUFFIX = os.environ.get("FORUM_HOST_SUFFIX", "forum.localhost")

SECRET_KEY = "agentgym-forum-not-a-secret-it-only-ever-serves-loopback"
DEBUG = False
ALLOWED_HOSTS = ["." + HOST_SUFFIX, HOST_SUFFIX, "127.0.0.1", "localhost"]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ.get("FORUM_DB_NAME", "forum_golden"),
        "USER": "postgres",
        "HOST": os.environ["FORUM_DB_HOST"],
        "PORT": int(os.environ.get("FORUM_DB_PORT", "5432")),
        "CONN_MAX_AGE": 0,
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"

# No shared cache: Misago caches settings, ACLs and categories under version keys kept in the
# database, and a tenant reset brings old versions back; a dummy cache keeps every tenant exact.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
SESSION_ENGINE = "django.contrib.sessions.backends.db"  # in the tenant's own database

# One fast hasher: seeded users share a hashed password, logins stay quick on a shared machine.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
AUTH_PASSWORD_VALIDATORS = []

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = str(HOME / "static")
MEDIA_URL = "/media/"
MEDIA_ROOT = str(HOME / "media")

EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
DEFAULT_FROM_EMAIL = "Forum <forum@forum.localhost>"

AUTH_USER_MODEL = "misago_users.User"
AUTHENTICATION_BACKENDS = ["misago.users.authbackends.MisagoBackend"]
CSRF_FAILURE_VIEW = "misago.core.errorpages.csrf_failure"

INSTALLED_APPS = [app for app in INSTALLED_APPS if app != "debug_toolbar"]
INSTALLED_PLUGINS = []

LOGIN_REDIRECT_URL = "misago:index"
LOGIN_URL = "misago:login"
LOGOUT_URL = "misago:logout"

MIDDLEWARE = [
    "forumproject.tenancy.TenantMiddleware",
    "misago.users.middleware.RealIPMiddleware",
    "misago.core.middleware.FrontendContextMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "misago.cache.middleware.cache_versions_middleware",
    "misago.conf.middleware.dynamic_settings_middleware",
    "misago.socialauth.middleware.socialauth_providers_middleware",
    "misago.users.middleware.UserMiddleware",
    "misago.acl.middleware.user_acl_middleware",
    "misago.core.middleware.ExceptionHandlerMiddleware",
    "misago.users.middleware.OnlineTrackerMiddleware",
    "misago.admin.middleware.AdminAuthMiddleware",
    "misago.threads.middleware.UnreadThreadsCountMiddleware",
]

ROOT_URLCONF = "forumproject.urls"
WSGI_APPLICATION = "forumproject.wsgi.application"
SOCIAL_AUTH_STRATEGY = "misago.socialauth.strategy.MisagoStrategy"
SOCIAL_AUTH_JSONFIELD_ENABLED = True

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": TEMPLATE_CONTEXT_PROCESSORS},
    }
]

REST_FRAMEWORK = {
    "DEFAULT_PERMISSION_CLASSES": ["misago.core.rest_permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "EXCEPTION_HANDLER": "misago.core.exceptionhandler.handle_api_exception",
    "UNAUTHENTICATED_USER": "misago.users.models.AnonymousUser",
    "URL_FORMAT_OVERRIDE": None,
}

# Celery runs Misago's background tasks (notifications, deletions) in the request: no broker.
CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_BROKER_URL = "memory://"

MISAGO_AVATARS_SIZES = [200, 100, 50]
MISAGO_SEARCH_CONFIG = "simple"
MISAGO_USER_DATA_DOWNLOADS_WORKING_DIR = str(HOME / "userdata")
MISAGO_NEW_REGISTRATIONS_VALIDATORS = []  # no Stop Forum Spam look-up (no network)
MISAGO_ADMIN_SESSION_EXPIRATION = 24 * 60  # minutes: a seeded admin stays signed in to the admin

LOGGING = {
    "version": 1,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"django": {"handlers": ["console"], "level": "WARNING"}},
}
