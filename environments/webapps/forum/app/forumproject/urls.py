"""Misago's URLs, its JavaScript translations, and uploaded media (avatars) served by Django.

Static files (Misago's React bundle, CSS, fonts) are served by WhiteNoise in wsgi.py.
"""

import re

from django.conf import settings
from django.urls import include, path, re_path
from django.views.i18n import JavaScriptCatalog
from django.views.static import serve

MEDIA = re.escape(settings.MEDIA_URL.lstrip("/"))

urlpatterns = [
    path("", include("misago.urls", namespace="misago")),
    path("django-i18n.js", JavaScriptCatalog.as_view(packages=["misago"]), name="django-i18n"),
    re_path(rf"^{MEDIA}(?P<path>.*)$", serve, {"document_root": settings.MEDIA_ROOT}),
]

# Misago renders its own error pages (its middlewares raise 403/404 that need them).
handler403 = "misago.core.errorpages.permission_denied"
handler404 = "misago.core.errorpages.page_not_found"
