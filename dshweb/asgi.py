"""ASGI entry point: Django for HTTP, Channels for the dashboard's WebSockets.

Sockets pass the exact origin check (:mod:`dshweb.site.origin`: scheme, host and port of
this server) and Django's session login before any consumer runs; one that fails because
the database cannot be reached closes with 4503 "store unavailable"
(:mod:`dshweb.live.unavailable`). Behind a trusted proxy the client's address is
the one its ``X-Forwarded-For`` names (:mod:`dshweb.site.forwarded`). ``/healthz`` and
``/readyz`` are answered before Django (:mod:`dshweb.site.health`). What runs beside the
pages (the hub, its publisher, the alert watcher, the demo replay, the systemd notifier)
starts with the server, on its event loop, with no request made
(:mod:`dshweb.live.startup`). A setting dshweb cannot use ends the process at import with
one line per setting and exit status 2 (:mod:`dshweb.setting_errors`). Under Daphne,
SIGTERM and SIGINT stop it on time (:mod:`dshweb.live.stopping`).
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

from dshweb.setting_errors import ConfigurationError, refuse

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dshweb.settings")
try:
    django_asgi = get_asgi_application()  # sets Django up before the imports below
except ConfigurationError as refused:
    raise SystemExit(refuse(refused)) from None

from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter

from dshweb.live.startup import StartLiveServices, start_with_the_server
from dshweb.live.stopping import stop_with_the_server
from dshweb.live.unavailable import StoreUnavailableSockets
from dshweb.sessions.routing import websocket_urlpatterns
from dshweb.site.forwarded import ForwardedClient
from dshweb.site.health import HealthChecks
from dshweb.site.origin import SameOriginValidator

application = ForwardedClient(
    HealthChecks(
        StartLiveServices(
            ProtocolTypeRouter(
                {
                    "http": django_asgi,
                    "websocket": StoreUnavailableSockets(
                        SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
                    ),
                }
            )
        ),
    )
)
start_with_the_server()  # Daphne's reactor, when it runs this module: dshweb serve, daphne
stop_with_the_server()
