"""The operations endpoint of a service: /metrics for Prometheus, and its probes: /healthz
(alive: the process answers) and /readyz (ready: it serves on the bus)."""

from collections.abc import Callable
from importlib.metadata import version

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, Info, disable_created_metrics, generate_latest

from libs.runtime.metrics import count_tasks
from libs.runtime.settings import BadSetting

__all__ = ["RELEASE", "start_ops_server"]

RELEASE = version("tether")  # the package as installed: what this process runs
BUILD = Info(
    "tether_build",
    "The tether release this process runs: during a rollout, which replicas run the new one.",
)


async def start_ops_server(host: str, port: int, *, ready: Callable[[], bool]) -> web.AppRunner:
    async def metrics(_: web.Request) -> web.Response:
        return web.Response(body=generate_latest(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def readyz(_: web.Request) -> web.Response:
        ok = ready()
        return web.json_response({"ready": ok}, status=200 if ok else 503)

    count_tasks()
    BUILD.info({"version": RELEASE})
    # Each counter's and histogram's creation time, a series beside each: read by nothing
    # an operator runs (a counter's reset shows in its value), a third more to scrape.
    disable_created_metrics()
    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as exc:  # a port in use, an address not this machine's
        await runner.cleanup()
        raise BadSetting(
            f"TETHER_METRICS_HOST={host!r}, TETHER_METRICS_PORT={port}: cannot listen there: "
            f"{exc.strerror or exc}"
        ) from None
    return runner
