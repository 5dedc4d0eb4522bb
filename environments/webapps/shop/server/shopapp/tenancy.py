"""Tenants: the request's host ``t<N>.shop.localhost`` selects the database ``shop_t<N>``.

Each server thread has its own connection (Django's); before the request touches the database,
the middleware points the thread's connection at the tenant's database (closing it when it was
on another one). Connections last one request (``CONN_MAX_AGE = 0``), so a tenant's database can
be dropped and copied (its reset) between requests.
"""

import re

from django.db import OperationalError, connections
from django.http import HttpResponse

_HOST = re.compile(r"t(\d{1,4})\.shop\.localhost")


class TenantMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        host = request.get_host().rsplit(":", 1)[0]
        match = _HOST.fullmatch(host)
        if match is None:
            return HttpResponse(
                f"Unknown host {host!r}: open the shop of tenant N at http://tN.shop.localhost:PORT/\n",
                status=404,
                content_type="text/plain",
            )
        database = f"shop_t{int(match[1])}"
        connection = connections["default"]
        if connection.settings_dict["NAME"] != database:
            connection.close()
            # A new dict: the settings dict is shared by every thread's connection.
            connection.settings_dict = {**connection.settings_dict, "NAME": database}
        try:
            connection.ensure_connection()
        except OperationalError as error:
            return HttpResponse(
                f"The shop of tenant {match[1]} has no database ({database}): reset the tenant first.\n{error}\n",
                status=503,
                content_type="text/plain",
            )
        return self.get_response(request)
