"""`python -m services.gateway.main`: the HTTP API, until SIGTERM."""

import logging

import uvloop
from aiohttp import web

from libs.runtime import logs
from libs.runtime.settings import BadSetting
from services.gateway.app import init_app
from services.gateway.settings import GatewaySettings


def main() -> None:
    try:
        settings = GatewaySettings.from_env()
    except BadSetting as exc:
        raise SystemExit(f"gateway: {exc}") from None
    logs.configure("gateway", settings.replica, settings.log_level)
    # aiohttp's run_app stops on SIGTERM and SIGINT, runs the cleanup contexts (NATS drain).
    web.run_app(
        init_app(settings),
        loop=uvloop.new_event_loop(),
        host=settings.host,
        port=settings.port,
        reuse_port=settings.reuse_port,
        access_log=None,
        print=lambda msg: logging.getLogger("gateway").info(msg),
        shutdown_timeout=10,
    )
    logging.getLogger("gateway").info("stopped")


if __name__ == "__main__":
    main()
