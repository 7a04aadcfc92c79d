"""What keeping a keyed request's answer costs: a confirmation question asked on the bus
with and without a request key (the runtime reads the `replies` bucket, runs the handler,
and keeps its answer before sending it), one at a time and at 20 in flight, in the same
run. One rooms replica in its own process, with the audit and agents services it asks.

    .venv/bin/python -m bench.keyed
"""

import itertools

import msgspec
import nats
import uvloop

from bench.common import flood, stack
from bench.rooms import ORG, USER, a_room
from libs.contracts.permissions import GATEWAY, inbox_prefix
from libs.contracts.principal import PRINCIPAL_HEADER, REQUEST_KEY_HEADER, Principal

SECONDS = 10


async def asked(url: str, passwords: dict[str, str], room: str) -> dict[str, dict]:
    nc = await nats.connect(
        url, user=GATEWAY, password=passwords[GATEWAY], inbox_prefix=inbox_prefix(GATEWAY)
    )
    agent = Principal(org=ORG, sub=USER, act=f"agent:{USER}")
    principal = {PRINCIPAL_HEADER: msgspec.json.encode(agent).decode()}
    body = msgspec.json.encode({"id": room, "text": "Friday?", "to": USER, "options": ["y", "n"]})
    keys = (f"{n:032x}" for n in itertools.count())

    async def ask(headers: dict[str, str]) -> None:
        reply = await nc.request("tether.rooms.ask", body, timeout=5, headers=headers)
        assert b'"seq"' in reply.data, reply.data

    async def plain() -> None:
        await ask(principal)

    async def keyed() -> None:
        await ask(principal | {REQUEST_KEY_HEADER: next(keys)})

    results = {}
    for in_flight in (1, 20):
        for name, send in (("without a key", plain), ("with a key, its answer kept", keyed)):
            results[f"{name}, {in_flight} in flight"] = await flood(
                send, seconds=SECONDS, in_flight=in_flight, warmup=200
            )
    await nc.close()
    return results


def main() -> None:
    with stack() as s:
        _, _, room = a_room(s)
        results = uvloop.run(asked(s.nats_url, s.passwords, room))

    print(f"tether.rooms.ask on the bus, {SECONDS} s each")
    print("| request | asked/s | p50 ms | p99 ms |")
    print("|---|---|---|---|")
    for name, m in results.items():
        print(f"| {name} | {m['rps']:,.0f} | {m['p50_ms']:.2f} | {m['p99_ms']:.2f} |")


if __name__ == "__main__":
    main()
