"""Django settings of the shop: django-oscar with a Whoosh search index, one PostgreSQL database per tenant.

Read from the environment (``ShopSite`` sets them): ``SHOP_HOME`` (static files, media, the search
index under ``golden/whoosh``), ``SHOP_PG_HOST`` (the PostgreSQL socket folder) and
``SHOP_DATABASE`` (the database management commands use; the web server picks a tenant's database
per request, see ``shopapp.tenancy``).
"""

import os
from pathlib import Path

from oscar.defaults import *  # noqa: F403 (django-oscar's documented way to take its defaults)

HOME = Path(os.environ["SHOP_HOME"])
# Local-only, disposable sites: a fixed key keeps the seeded session cookies valid across restarts.
SECRET_KEY = "agentgym-shop-local-only-not-secret"
DEBUG = False
ALLOWED_HOSTS = [".shop.localhost", "localhost", "127.0.0.1"]
ROOT_URLCONF = "shopapp.urls"
WSGI_APPLICATION = "shopapp.wsgi.application"
SITE_ID = 1
USE_TZ = True
TIME_ZONE = "UTC"
LANGUAGE_CODE = "en-gb"
LANGUAGES = [("en-gb", "English")]  # one: no language menu of 90 entries on every page
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "HOST": os.environ["SHOP_PG_HOST"],
        "PORT": "5432",
        "USER": "postgres",
        "NAME": os.environ.get("SHOP_DATABASE", "shop_golden"),
        # One connection per request: a tenant's database is dropped and copied on reset, which
        # would break a pooled connection.
        "CONN_MAX_AGE": 0,
    }
}
# No shared cache: a cache would be shared by every tenant.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
SESSION_ENGINE = "django.contrib.sessions.backends.db"  # in the tenant's own database
SESSION_COOKIE_AGE = 10 * 365 * 24 * 3600

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.sites",
    "django.contrib.flatpages",
    "oscar.config.Shop",
    "oscar.apps.analytics.apps.AnalyticsConfig",
    "oscar.apps.checkout.apps.CheckoutConfig",
    "oscar.apps.address.apps.AddressConfig",
    "oscar.apps.shipping.apps.ShippingConfig",
    "oscar.apps.catalogue.apps.CatalogueConfig",
    "oscar.apps.catalogue.reviews.apps.CatalogueReviewsConfig",
    "oscar.apps.communication.apps.CommunicationConfig",
    "oscar.apps.partner.apps.PartnerConfig",
    "oscar.apps.basket.apps.BasketConfig",
    "oscar.apps.payment.apps.PaymentConfig",
    "oscar.apps.offer.apps.OfferConfig",
    "oscar.apps.order.apps.OrderConfig",
    "oscar.apps.customer.apps.CustomerConfig",
    "oscar.apps.search.apps.SearchConfig",
    "oscar.apps.voucher.apps.VoucherConfig",
    "oscar.apps.wishlists.apps.WishlistsConfig",
    "oscar.apps.dashboard.apps.DashboardConfig",
    "oscar.apps.dashboard.reports.apps.ReportsDashboardConfig",
    "oscar.apps.dashboard.users.apps.UsersDashboardConfig",
    "oscar.apps.dashboard.orders.apps.OrdersDashboardConfig",
    "oscar.apps.dashboard.catalogue.apps.CatalogueDashboardConfig",
    "oscar.apps.dashboard.offers.apps.OffersDashboardConfig",
    "oscar.apps.dashboard.partners.apps.PartnersDashboardConfig",
    "oscar.apps.dashboard.pages.apps.PagesDashboardConfig",
    "oscar.apps.dashboard.ranges.apps.RangesDashboardConfig",
    "oscar.apps.dashboard.reviews.apps.ReviewsDashboardConfig",
    "oscar.apps.dashboard.vouchers.apps.VouchersDashboardConfig",
    "oscar.apps.dashboard.communications.apps.CommunicationsDashboardConfig",
    "oscar.apps.dashboard.shipping.apps.ShippingDashboardConfig",
    "widget_tweaks",
    "haystack",
    "treebeard",
    "django_tables2",
    "shopapp",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "shopapp.tenancy.TenantMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "oscar.apps.basket.middleware.BasketMiddleware",
    "django.contrib.flatpages.middleware.FlatpageFallbackMiddleware",
]

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [str(Path(__file__).parent / "templates")],  # our few overrides of oscar's templates
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.debug",
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.template.context_processors.i18n",
                "django.contrib.messages.context_processors.messages",
                "oscar.apps.search.context_processors.search_form",
                "oscar.apps.checkout.context_processors.checkout",
                "oscar.apps.communication.notifications.context_processors.notifications",
                "oscar.core.context_processors.metadata",
            ]
        },
    }
]

AUTHENTICATION_BACKENDS = (
    "oscar.apps.customer.auth_backends.EmailBackend",
    "django.contrib.auth.backends.ModelBackend",
)
# Fast hashing: every account shares one seeded password, and sites are local and disposable.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]

HAYSTACK_CONNECTIONS = {
    "default": {"ENGINE": "haystack.backends.whoosh_backend.WhooshEngine", "PATH": str(HOME / "golden" / "whoosh")}
}
# The index is the golden catalogue's, shared by every tenant: a tenant's saves must not write to it (Oscar's
# default, the real-time processor, let a review in one tenant change every tenant's "rating" facet counts).
HAYSTACK_SIGNAL_PROCESSOR = "haystack.signals.BaseSignalProcessor"

STATIC_URL = "/static/"
STATIC_ROOT = str(HOME / "static")
MEDIA_URL = "/media/"
MEDIA_ROOT = str(HOME / "media")
EMAIL_BACKEND = "django.core.mail.backends.dummy.EmailBackend"

OSCAR_SHOP_NAME = "Agentgym Shop"
OSCAR_DEFAULT_CURRENCY = "GBP"
OSCAR_THUMBNAILER = "shopapp.thumbnails.PlainThumbnailer"
OSCAR_ALLOW_ANON_REVIEWS = False
OSCAR_MODERATE_REVIEWS = False
OSCAR_PRODUCTS_PER_PAGE = 20
OSCAR_ORDER_STATUS_PIPELINE = {
    "Pending": ("Being processed", "Cancelled"),
    "Being processed": ("Shipped", "Cancelled"),
    "Shipped": ("Complete",),
    "Complete": (),
    "Cancelled": (),
}
OSCAR_INITIAL_ORDER_STATUS = "Pending"
OSCAR_INITIAL_LINE_STATUS = "Pending"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
