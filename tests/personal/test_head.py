"""RFC 9110 §9.3.2: a server answers HEAD wherever it answers GET, with the GET's headers
and no body. Before, every GET of the API answered HEAD 405: a monitor or a link checker
asking whether a resource is there was told the method is wrong."""

import asyncio

from tests.personal.conftest import room_with
from tests.support import bearer, gateway_metrics, token


async def test_head_is_the_get_without_its_body(api, people):
    room = await room_with(api, people, people.bob_id)
    for path in ("/v1/rooms", f"/v1/rooms/{room['id']}", "/v1/ladder", "/v1/windows"):
        got = await api.get(path, headers=people.ada)
        head = await api.head(path, headers=people.ada)
        assert (head.status, await head.read()) == (200, b""), path
        assert head.headers["Content-Type"] == got.headers["Content-Type"]
        assert int(head.headers["Content-Length"]) == len(await got.read())
    # Another's room is as absent to HEAD as to GET, and a POST-only route still says so.
    theirs = await api.head(f"/v1/rooms/{room['id']}", headers=people.eve)
    assert theirs.status == 404
    assert (await api.head("/v1/poa/verify", headers=people.ada)).status == 405


async def test_a_stream_s_head_is_its_get_s_answer_with_no_stream_opened(whole_api, people):
    """Before, each stream's HEAD was 405. A HEAD is checked as its GET is (whose room,
    who may read) and answers at once, holding no stream open."""
    api = whole_api
    room = await room_with(api, people, people.bob_id)
    streams = (f"/v1/rooms/{room['id']}/messages/stream", "/v1/pending/stream", "/v1/mod/watch")
    before = await _open(api)
    for path in streams:
        head = await asyncio.wait_for(api.head(path, headers=people.ada), 10)
        assert (head.status, await head.read()) == (200, b""), path
        assert head.headers["Content-Type"] == "text/event-stream", path
        assert head.headers["X-Accel-Buffering"] == "no", path
    assert await _open(api) == before
    assert (await api.head(streams[0], headers=people.eve)).status == 404
    bad_cursor = await api.head(streams[0], headers=people.ada | {"Last-Event-ID": "x"})
    assert bad_cursor.status == 422
    agent = bearer(token(org=people.org, user=people.ada_id, act=f"agent:{people.ada_id}"))
    assert (await api.head(streams[1], headers=agent)).status == 403


async def _open(api) -> float:
    metrics = await gateway_metrics(api)
    (line,) = [m for m in metrics.splitlines() if m.startswith("tether_http_streams_open ")]
    return float(line.split()[1])
