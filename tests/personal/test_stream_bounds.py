"""A stream is bounded: in time by the token that opened it (what a token no longer admits,
it no longer reads, however long its stream was open), and in number by its caller (each
holds subscriptions, and a watch consumers on the NATS server, for as long as it is open)."""

import asyncio
import contextlib

import msgspec

from tests.personal.conftest import WHOLE, problem, room_with, say
from tests.support import bearer, expiring, gateway_metrics, token

_TAKEN_FOR_S = 4


def _expiring(org: str, user: str, seconds: int = _TAKEN_FOR_S) -> dict[str, str]:
    return bearer(expiring(org, user, seconds))


def _events(body: bytes) -> list[tuple[str, str]]:
    """(event, data) of each event in a whole stream's body; comments passed over."""
    found = []
    for block in body.decode().split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in block.splitlines() if not line.startswith(":")
        )
        if "event" in fields:
            found.append((fields["event"], fields.get("data", "")))
    return found


async def test_every_stream_ends_refused_when_its_token_expires(whole_api, people):
    api = whole_api
    room = await room_with(api, people)
    said = await say(api, room, people.ada, "before the stream")
    token = _expiring(people.org, people.ada_id)
    streams = {
        f"/v1/rooms/{room['id']}/messages/stream": "message",
        "/v1/pending/stream": "pending",
        "/v1/mod/watch": None,
    }

    async def read(path: str) -> list[tuple[str, str]]:
        async with api.get(path, headers=token) as stream:
            assert stream.status == 200, await stream.text()
            return _events(await asyncio.wait_for(stream.content.read(), 10 + _TAKEN_FOR_S))

    bodies = await asyncio.gather(*(read(path) for path in streams))
    for (path, first), events in zip(streams.items(), bodies, strict=True):
        *before, (last, data) = events
        assert [name for name, _ in before] == ([first] if first else []), path
        assert last == "refused", path
        refusal = msgspec.json.decode(data)
        assert (refusal["status"], refusal["type"]) == (401, "urn:tether:problem:token-expired")
        assert await problem(await api.get(path, headers=token)) == (401, "token-expired")
    assert msgspec.json.decode(bodies[0][0][1])["seq"] == said["seq"]


async def test_a_caller_holds_no_more_streams_than_the_gateway_allows(
    client_for, gateway_settings, whole_api, people
):
    gateway = await client_for(
        msgspec.structs.replace(gateway_settings, streams_per_caller=2), services=WHOLE
    )
    room = await room_with(gateway, people)
    paths = [f"/v1/rooms/{room['id']}/messages/stream", "/v1/pending/stream", "/v1/mod/watch"]
    # Taken long enough for every check below, on a busy machine, before it ends her streams.
    hers = _expiring(people.org, people.ada_id, 8)
    before = await _open(gateway)
    async with contextlib.AsyncExitStack() as held:
        streams = [
            await held.enter_async_context(gateway.get(path, headers=hers)) for path in paths[:2]
        ]
        assert [s.status for s in streams] == [200, 200]
        assert await _open(gateway) == before + 2
        for path in paths:  # whichever token of hers asks
            response = await gateway.get(path, headers=people.ada)
            assert await problem(response) == (429, "too-many-streams"), path
            assert (await gateway.head(path, headers=people.ada)).status == 429, path
        # Her agent's (it watches with mod:read) and another's are their own.
        agent = token(org=people.org, user=people.ada_id, act=f"agent:{people.ada_id}",
                      roles=("mod:read",))  # fmt: skip
        for who in (bearer(agent), people.root):
            other = await held.enter_async_context(gateway.get(paths[2], headers=who))
            assert other.status == 200, await other.text()
        assert await _open(gateway) == before + 4
        # Once her streams end (their token expires), their places are hers again.
        for stream in streams:
            await asyncio.wait_for(stream.content.read(), 20)
        assert await _open(gateway) == before + 2
        async with gateway.get(paths[2], headers=people.ada) as again:
            assert again.status == 200, await again.text()


async def _open(gateway) -> float:
    """The gateway's gauge of open streams, as its operator's scraper reads it."""
    metrics = await gateway_metrics(gateway)
    (line,) = [m for m in metrics.splitlines() if m.startswith("tether_http_streams_open ")]
    return float(line.split()[1])
