"""The baseline: a bare aiohttp handler returning fixed JSON bytes (argv: port, body file)."""

import sys

import uvloop
from aiohttp import web

port, body = int(sys.argv[1]), open(sys.argv[2], "rb").read()


async def readyz(_: web.Request) -> web.Response:
    return web.Response(body=body, content_type="application/json")


app = web.Application()
app.router.add_get("/readyz", readyz)
web.run_app(
    app, host="127.0.0.1", port=port, access_log=None, print=None, loop=uvloop.new_event_loop()
)
