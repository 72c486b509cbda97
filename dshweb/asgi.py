"""ASGI entry point: Django for HTTP, Channels for the dashboard's WebSockets.

Sockets pass the exact origin check (:mod:`dshweb.site.origin`: scheme, host and port of
this server) and Django's session login before any consumer runs; one that fails because
the database cannot be reached closes with 4503 "store unavailable"
(:mod:`dshweb.live.unavailable`). Behind a trusted proxy the client's address is
the one its ``X-Forwarded-For`` names (:mod:`dshweb.site.forwarded`). The hub starts
folding the home at once; its publisher starts on the server's event loop with the first
connection of any kind.
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dshweb.settings")
django_asgi = get_asgi_application()  # sets Django up before the imports below

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from dshweb.live.startup import StartLiveServices  # noqa: E402
from dshweb.live.unavailable import StoreUnavailableSockets  # noqa: E402
from dshweb.sessions.routing import websocket_urlpatterns  # noqa: E402
from dshweb.site.forwarded import ForwardedClient  # noqa: E402
from dshweb.site.origin import SameOriginValidator  # noqa: E402

application = ForwardedClient(
    StartLiveServices(
        ProtocolTypeRouter(
            {
                "http": django_asgi,
                "websocket": StoreUnavailableSockets(
                    SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
                ),
            }
        ),
    )
)
