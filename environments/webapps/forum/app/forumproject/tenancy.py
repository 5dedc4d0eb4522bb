"""One server, many tenants: the request's Host names the database it reads and writes.

``t3.forum.localhost`` is tenant 3, whose state is the PostgreSQL database ``forum_t3`` (a copy
of ``forum_golden``). Django keeps one connection per thread; before each request this
middleware points the thread's connection at the tenant's database (closing it first when it
was open on another one), so every query of the request, Misago's raw SQL and transactions
included, goes to that tenant. Sessions live in the tenant's database, the cache is a dummy.
"""

import re

from django.conf import settings
from django.db import OperationalError, connection
from django.http import HttpResponse

_TENANT_HOST = re.compile(rf"^t(\d{{1,3}})\.{re.escape(settings.HOST_SUFFIX)}(?::\d+)?$")


def tenant_database(host: str) -> str | None:
    """The database of the tenant named by ``host`` (``forum_t3``), or None for another host."""
    match = _TENANT_HOST.match(host.lower())
    return f"forum_t{int(match.group(1))}" if match else None


def use_database(name: str) -> None:
    """Point this thread's connection at database ``name``."""
    if connection.settings_dict["NAME"] != name:
        connection.close()
        # A copy: the settings dict is shared by every thread's connection object.
        connection.settings_dict = {**connection.settings_dict, "NAME": name}


class TenantMiddleware:
    """Route the request to its tenant's database; other hosts, and tenants never reset, get a 404 that says why."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        host = request.META.get("HTTP_HOST", "")
        database = tenant_database(host)
        if database is None:
            return HttpResponse(
                f"This forum serves tenants at t<N>.{settings.HOST_SUFFIX}, not at {host!r}.\n",
                status=404,
                content_type="text/plain",
            )
        use_database(database)
        try:
            connection.ensure_connection()
        except OperationalError:
            return HttpResponse(
                f"Tenant {host.split('.')[0]} has no forum: its database {database} is missing (reset the tenant).\n",
                status=404,
                content_type="text/plain",
            )
        return self.get_response(request)
