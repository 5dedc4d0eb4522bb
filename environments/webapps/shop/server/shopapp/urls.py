"""The shop's URLs: django-oscar's storefront and dashboard."""

from django.apps import apps
from django.urls import include, path

urlpatterns = [
    path("i18n/", include("django.conf.urls.i18n")),
    path("", include(apps.get_app_config("oscar").urls[0])),
]
