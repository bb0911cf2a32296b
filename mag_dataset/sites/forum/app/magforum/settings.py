"""Settings of the forum site: Spirit on SQLite with the whole state in one database file.

The cache, the rate-limit cache, sessions and Spirit's config all live in that file (Django's
database cache, not process memory), so restoring the file (``Site.reset``) is all a reset needs,
as the running server sees it. Paths come from ``MAG_FORUM_HOME`` (the site's home folder).
"""
import os
from pathlib import Path

HOME = Path(os.environ.get("MAG_FORUM_HOME", Path(__file__).resolve().parents[2]))
BASE_DIR = HOME / "app"

SECRET_KEY = "mag-forum-local-only"  # served on 127.0.0.1 only, seeded test data
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "spirit.core",
    "spirit.admin",
    "spirit.search",
    "spirit.user",
    "spirit.user.admin",
    "spirit.user.auth",
    "spirit.category",
    "spirit.category.admin",
    "spirit.topic",
    "spirit.topic.admin",
    "spirit.topic.favorite",
    "spirit.topic.moderate",
    "spirit.topic.notification",
    "spirit.topic.private",
    "spirit.topic.unread",
    "spirit.comment",
    "spirit.comment.bookmark",
    "spirit.comment.flag",
    "spirit.comment.flag.admin",
    "spirit.comment.history",
    "spirit.comment.like",
    "spirit.comment.poll",
    "djconfig",
    "haystack",
    "magforum.apps.MagForumConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "spirit.user.middleware.TimezoneMiddleware",
    "spirit.user.middleware.LastIPMiddleware",
    "spirit.user.middleware.LastSeenMiddleware",
    "spirit.user.middleware.ActiveUserMiddleware",
    "spirit.core.middleware.PrivateForumMiddleware",
    "djconfig.middleware.DjConfigMiddleware",
]

TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "DIRS": [],
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.contrib.auth.context_processors.auth",
        "django.template.context_processors.debug",
        "django.template.context_processors.i18n",
        "django.template.context_processors.media",
        "django.template.context_processors.static",
        "django.template.context_processors.tz",
        "django.template.context_processors.request",
        "django.contrib.messages.context_processors.messages",
        "djconfig.context_processors.config",
    ]},
}]

DATABASES = {"default": {
    "ENGINE": "django.db.backends.sqlite3",
    "NAME": str(HOME / "db" / "forum.sqlite3"),
    "OPTIONS": {"timeout": 20},
}}

CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "spirit_cache"},
    "st_rate_limit": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "spirit_rl_cache",
                      "TIMEOUT": None},
}
SESSION_ENGINE = "django.contrib.sessions.backends.db"
# Browsers key cookies by host, not port: on 127.0.0.1 the shop (also Django) would otherwise
# overwrite this site's session and CSRF cookies, logging its user out.
SESSION_COOKIE_NAME = "forum_sessionid"
CSRF_COOKIE_NAME = "forum_csrftoken"

AUTHENTICATION_BACKENDS = [
    "spirit.user.auth.backends.UsernameAuthBackend",
    "spirit.user.auth.backends.EmailAuthBackend",
]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins for seeded users

HAYSTACK_CONNECTIONS = {"default": {
    "ENGINE": "haystack.backends.whoosh_backend.WhooshEngine",
    "PATH": str(HOME / "search"),
}}
HAYSTACK_SIGNAL_PROCESSOR = "spirit.search.signals.RealtimeSignalProcessor"

ROOT_URLCONF = "magforum.urls"
WSGI_APPLICATION = "magforum.wsgi.application"
LOGIN_URL = "spirit:user:auth:login"
LOGIN_REDIRECT_URL = "spirit:index"
LOGOUT_REDIRECT_URL = "spirit:index"

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = str(HOME / "app" / "static")
MEDIA_URL = "/media/"
MEDIA_ROOT = str(HOME / "app" / "media")
STORAGES = {
    "default": {"BACKEND": "spirit.core.storage.OverwriteFileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"  # nothing leaves the machine

ST_SITE_URL = os.environ.get("MAG_FORUM_URL", "http://127.0.0.1:8474/")
ST_TASK_MANAGER = None
ST_RATELIMIT_ENABLE = False  # agents may post faster than a person; limits would make episodes flaky
ST_DOUBLE_POST_THRESHOLD_MINUTES = 0
ST_UPLOAD_IMAGE_ENABLED = False
ST_NOTIFY_WHEN = "never"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"django": {"handlers": ["console"], "level": "ERROR", "propagate": False}},
}
