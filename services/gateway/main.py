"""`python -m services.gateway.main`: the HTTP API, until SIGTERM."""

import errno
import logging
import socket

import uvloop
from aiohttp import web

from libs.runtime import logs
from libs.runtime.ops import RELEASE
from libs.runtime.settings import BadSetting
from services.gateway.app import init_app
from services.gateway.settings import GatewaySettings

_log = logging.getLogger("gateway")


def main() -> None:
    try:
        settings = GatewaySettings.from_env()
    except BadSetting as exc:
        raise SystemExit(f"gateway: {exc}") from None
    logs.configure("gateway", settings.replica, settings.log_level)
    # aiohttp's run_app stops on SIGTERM and SIGINT, runs the cleanup contexts (NATS drain).
    try:
        web.run_app(
            init_app(settings),
            loop=uvloop.new_event_loop(),
            host=settings.host,
            port=settings.port,
            reuse_port=settings.reuse_port,
            access_log=None,
            # Said when it listens, as one log line with its address, not aiohttp's banner.
            print=lambda _: _log.info(
                "listening",
                extra={"host": settings.host, "port": settings.port, "version": RELEASE},
            ),
            shutdown_timeout=10,
        )
    except BadSetting as exc:  # its metrics' address, found as it starts
        raise SystemExit(f"gateway: {exc}") from None
    except OSError as exc:
        if not isinstance(exc, socket.gaierror) and exc.errno not in _CANNOT_LISTEN:
            raise
        raise SystemExit(
            f"gateway: TETHER_HOST={settings.host!r}, TETHER_PORT={settings.port}: "
            f"cannot listen there: {exc.strerror or exc}"
        ) from None
    _log.info("stopped")


# What binding the API's address fails with: a port in use, an address not this machine's.
_CANNOT_LISTEN = {errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES}


if __name__ == "__main__":
    main()
