"""Product images without a thumbnail store: the shop's products show the image as it is.

django-oscar's default thumbnailer (sorl-thumbnail) records every thumbnail in a database table,
which would change a tenant's state when a page is merely viewed.
"""

from dataclasses import dataclass

from django.conf import settings
from oscar.core.thumbnails import AbstractThumbnailer


@dataclass
class Image:
    url: str
    width: int | None = None
    height: int | None = None


class PlainThumbnailer(AbstractThumbnailer):
    """The source image itself (the missing-image placeholder from static files for products without one)."""

    def generate_thumbnail(self, source, **options):
        name = getattr(source, "name", str(source))
        if name == settings.OSCAR_MISSING_IMAGE_URL:
            return Image(f"{settings.STATIC_URL}oscar/img/{name}")
        return Image(f"{settings.MEDIA_URL}{name}")

    def delete_thumbnails(self, source):
        return None
