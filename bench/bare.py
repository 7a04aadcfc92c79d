"""The baseline: a bare aiohttp handler returning fixed JSON bytes on any GET or POST path
(argv: port, body file[, "reuse"]: several processes sharing the port, as the gateway's)."""

import sys

import uvloop
from aiohttp import web

port, body = int(sys.argv[1]), open(sys.argv[2], "rb").read()
reuse = sys.argv[3:] == ["reuse"]


async def fixed(_: web.Request) -> web.Response:
    return web.Response(body=body, content_type="application/json")


app = web.Application()
app.router.add_route("*", "/{tail:.*}", fixed)
web.run_app(
    app, host="127.0.0.1", port=port, access_log=None, print=None,
    loop=uvloop.new_event_loop(), reuse_port=reuse,
)  # fmt: skip
