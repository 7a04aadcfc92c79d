"""Messages stored per second (on the bus at 50 in flight, and through the gateway with wrk
-c50) against the floor of a bare JetStream publish of the same bytes; then the time from
an inbound SMS webhook to the message being readable in the room, against the floor of a
JetStream publish and a direct get of it. One rooms replica in its own process, with the
audit and agents services it asks.

    .venv/bin/python -m bench.rooms
"""

import re
import secrets
import tempfile
import time
from urllib.parse import urlencode

import aiohttp
import msgspec
import nats
import uvloop

from bench.common import Stack, flood, free_port, percentile, stack, wrk
from libs.contracts.permissions import GATEWAY, OPERATOR, inbox_prefix
from libs.contracts.principal import PRINCIPAL_HEADER, Principal
from services.gateway.tokens import mint
from services.rooms.domain.lines import sign_twilio

IN_FLIGHT, SECONDS, WEBHOOKS = 50, 10, 1000
TEXT = "Can you send me the Q3 numbers before Friday's review? " * 2
USER, ORG = "bench/ada", "bench"
CARRIER_TOKEN = "bench-twilio-auth-token"


async def on_the_bus(url: str, passwords: dict[str, str], room: str) -> dict[str, dict]:
    gateway = await nats.connect(
        url, user=GATEWAY, password=passwords[GATEWAY], inbox_prefix=inbox_prefix(GATEWAY)
    )
    rooms = await nats.connect(
        url, user="rooms", password=passwords["rooms"], inbox_prefix=inbox_prefix("rooms")
    )
    headers = {PRINCIPAL_HEADER: msgspec.json.encode(Principal(org=ORG, sub=USER)).decode()}
    body = msgspec.json.encode({"id": room, "text": TEXT})
    stored_like = msgspec.json.encode(
        {
            "seq": 0,
            "room": room,
            "at": "2026-11-30T12:00:00Z",
            "author": USER,
            "author_kind": "human",
            "text": TEXT,
        }
    )
    js = rooms.jetstream()

    async def send() -> None:
        reply = await gateway.request("tether.rooms.send", body, timeout=5, headers=headers)
        assert b'"seq"' in reply.data, reply.data

    async def publish() -> None:
        await js.publish(f"rooms.msg.{ORG}.{room}", stored_like)

    results = {
        "floor: JetStream publish of a stored message": await flood(
            publish, seconds=SECONDS, in_flight=IN_FLIGHT
        ),
        "tether.rooms.send on the bus": await flood(send, seconds=SECONDS, in_flight=IN_FLIGHT),
    }
    await gateway.close()
    await rooms.close()
    return results


async def _code_sent(url: str, passwords: dict[str, str], number: str) -> str:
    """The code the recording transport sent to `number`, as the carrier would deliver it."""
    nc = await nats.connect(
        url, user=OPERATOR, password=passwords[OPERATOR], inbox_prefix=inbox_prefix(OPERATOR)
    )
    raw = await nc.jetstream().get_last_msg("ROOMS", f"rooms.outbound.sms.{ORG}")
    await nc.close()
    sent = msgspec.json.decode(raw.data)
    assert sent["to"] == number, sent
    return re.search(r"\b(\d{6})\b", sent["text"])[1]


async def webhook_to_readable(base: str, token: str, url: str, passwords: dict[str, str]):
    """Each inbound SMS posted, then the room read until it holds it: p50/p99 of that."""
    auth = {"Authorization": f"Bearer {token}"}
    number = f"+1555{secrets.randbelow(10**7):07d}"
    path = "/v1/lines/sms/inbound"
    async with aiohttp.ClientSession(base) as http:
        line = {"transport": "sms", "address": number, "credential": CARRIER_TOKEN}
        async with http.post("/v1/lines", json=line, headers=auth) as response:
            assert response.status == 201, await response.text()
        code = await _code_sent(url, passwords, number)
        async with http.post("/v1/lines/sms/verify", json={"code": code}, headers=auth) as r:
            assert r.status == 200, await r.text()  # a line takes webhooks once proven
        samples, room, after = [], None, 0
        for i in range(WEBHOOKS):
            fields = {
                "From": "+14155550100",
                "To": number,
                "Body": f"inbound {i}",
                "MessageSid": f"SM{secrets.token_hex(16)}",
            }
            signature = sign_twilio(CARRIER_TOKEN, base + path, list(fields.items()))
            headers = {
                "Content-Type": "application/x-www-form-urlencoded",
                "X-Twilio-Signature": signature,
                "Accept": "application/json",  # the room it landed in (Twilio's is TwiML)
            }
            start = time.perf_counter()
            async with http.post(path, data=urlencode(fields), headers=headers) as response:
                assert response.status == 200, await response.text()
                room = (await response.json())["room"]
            while True:
                params = {"after": after, "limit": 10}
                async with http.get(
                    f"/v1/rooms/{room}/messages", params=params, headers=auth
                ) as response:
                    found = (await response.json())["messages"]
                if any(m["text"] == f"inbound {i}" for m in found):
                    after = found[-1]["seq"]
                    break
            samples.append(time.perf_counter() - start)

    nc = await nats.connect(
        url, user="rooms", password=passwords["rooms"], inbox_prefix=inbox_prefix("rooms")
    )
    js, floor = nc.jetstream(), []
    for i in range(WEBHOOKS):
        start = time.perf_counter()
        ack = await js.publish(f"rooms.msg.{ORG}.floor", f"inbound {i}".encode())
        await js.get_msg("ROOMS", ack.seq, direct=True)
        floor.append(time.perf_counter() - start)
    await nc.close()
    return samples, floor


def a_room(s: Stack) -> tuple[str, str, str]:
    """Rooms with the audit and agents services it asks, behind a gateway, and a room of
    USER's: the gateway's address, USER's token and the room."""
    for name in ("audit", "agents", "rooms"):
        s.service(name)
    port = free_port()
    s.gateway(port)
    base = f"http://127.0.0.1:{port}"
    token = mint(s.home.jwt_key(), org=ORG, user=USER, now=int(time.time()))

    async def make_room() -> str:
        async with aiohttp.ClientSession(base) as http:
            auth = {"Authorization": f"Bearer {token}"}
            async with http.post("/v1/rooms", json={"title": "bench"}, headers=auth) as r:
                assert r.status == 201, await r.text()
                return (await r.json())["id"]

    return base, token, uvloop.run(make_room())


def main() -> None:
    with stack() as s:
        base, token, room = a_room(s)
        bus = uvloop.run(on_the_bus(s.nats_url, s.passwords, room))
        with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
            script.write(
                'wrk.method = "POST"\n'
                f"wrk.body = [[{msgspec.json.encode({'text': TEXT}).decode()}]]\n"
                'wrk.headers["Content-Type"] = "application/json"\n'
            )
        http = wrk(
            f"{base}/v1/rooms/{room}/messages",
            script=script.name,
            headers={"Authorization": f"Bearer {token}"},
            seconds=SECONDS,
        )
        samples, floor = uvloop.run(webhook_to_readable(base, token, s.nats_url, s.passwords))

    print(f"messages of {len(TEXT)} characters, {SECONDS} s each")
    print("| path | messages stored/s | p50 ms | p99 ms |")
    print("|---|---|---|---|")
    rows = [*bus.items(), ("POST /v1/rooms/{id}/messages through the gateway, wrk -c50", http)]
    for name, m in rows:
        print(f"| {name} | {m['rps']:,.0f} | {m['p50_ms']:.2f} | {m['p99_ms']:.2f} |")
    print(f"(non-2xx through the gateway: {http['non_2xx']:.0f})\n")
    print(f"inbound SMS webhook to readable in the room, {WEBHOOKS} in sequence")
    print("| path | p50 ms | p99 ms |")
    print("|---|---|---|")
    for name, values in (
        ("signed webhook → stored → GET messages shows it", samples),
        ("floor: JetStream publish + direct get", floor),
    ):
        print(
            f"| {name} | {percentile(values, 50) * 1e3:.2f} | {percentile(values, 99) * 1e3:.2f} |"
        )


if __name__ == "__main__":
    main()
