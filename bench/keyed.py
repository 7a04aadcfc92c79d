"""What keying a request costs, one at a time and at 20 in flight, in the same run:

- a confirmation question asked on the bus with and without a request key (the runtime
  reads the `replies` bucket, runs the handler, and keeps its answer before sending it);
- a Power-of-Action act with and without one (poa looks for the key in `poa-acts`, then
  charges with the key's decision and the request's digest in the ledger), the keyed acts
  on trees already holding as many keys as the ledger keeps, so each also keeps the key it
  pushes out of the ledger in `poa-acts`.

One replica each of rooms, poa, audit and agents, each in its own process.

    .venv/bin/python -m bench.keyed
"""

import asyncio
import itertools

import msgspec
import nats
import uvloop
from nats.aio.client import Client

from bench.common import flood, stack
from bench.failover import AGENT, act_of, roomy_grant
from bench.rooms import ORG, USER, a_room
from libs.contracts.permissions import GATEWAY, inbox_prefix
from libs.contracts.principal import PRINCIPAL_HEADER, REQUEST_KEY_HEADER, Principal
from services.poa.domain.ledger import KEYS_KEPT

SECONDS = 10
GRANTS = 20  # each its own ledger: acts in flight together do not contend on one
_keys = (f"{n:032x}" for n in itertools.count())


async def asked(url: str, passwords: dict[str, str], room: str) -> dict[str, dict]:
    nc = await nats.connect(
        url, user=GATEWAY, password=passwords[GATEWAY], inbox_prefix=inbox_prefix(GATEWAY)
    )
    agent = Principal(org=ORG, sub=USER, act=f"agent:{USER}")
    principal = {PRINCIPAL_HEADER: msgspec.json.encode(agent).decode()}
    body = msgspec.json.encode({"id": room, "text": "Friday?", "to": USER, "options": ["y", "n"]})

    async def ask(headers: dict[str, str]) -> None:
        reply = await nc.request("tether.rooms.ask", body, timeout=5, headers=headers)
        assert b'"seq"' in reply.data, reply.data

    async def plain() -> None:
        await ask(principal)

    async def keyed() -> None:
        await ask(principal | {REQUEST_KEY_HEADER: next(_keys)})

    results = {}
    for in_flight in (1, 20):
        for name, send in (("without a key", plain), ("with a key, its answer kept", keyed)):
            results[f"{name}, {in_flight} in flight"] = await flood(
                send, seconds=SECONDS, in_flight=in_flight, warmup=200
            )
    await nc.close()
    return results


async def acted(url: str, passwords: dict[str, str]) -> dict[str, dict]:
    nc = await nats.connect(
        url, user=GATEWAY, password=passwords[GATEWAY], inbox_prefix=inbox_prefix(GATEWAY)
    )
    agent = Principal(org=ORG, sub=USER, act=AGENT)
    principal = {PRINCIPAL_HEADER: msgspec.json.encode(agent).decode()}
    plain_grants = itertools.cycle([await _issued(nc, f"poa_plain_{n}") for n in range(GRANTS)])
    keyed_grants = itertools.cycle([await _issued(nc, f"poa_keyed_{n}") for n in range(GRANTS)])
    envelope = act_of(1)

    async def act(grant: str, headers: dict[str, str]) -> None:
        body = msgspec.json.encode({"id": grant, "envelope": envelope})
        reply = await nc.request("tether.poa.act", body, timeout=5, headers=headers)
        assert b'"ALLOW"' in reply.data, reply.data

    async def plain() -> None:
        await act(next(plain_grants), principal)

    async def keyed() -> None:
        await act(next(keyed_grants), principal | {REQUEST_KEY_HEADER: next(_keys)})

    for _ in range(KEYS_KEPT):  # every keyed grant's ledger holding as many keys as it keeps
        await asyncio.gather(*(keyed() for _ in range(GRANTS)))
    results = {}
    for in_flight in (1, 20):
        for name, send in (("without a key", plain), (f"with a key, {KEYS_KEPT} held", keyed)):
            results[f"{name}, {in_flight} in flight"] = await flood(
                send, seconds=SECONDS, in_flight=in_flight, warmup=200
            )
    await nc.close()
    return results


async def _issued(nc: Client, grant_id: str) -> str:
    person = {PRINCIPAL_HEADER: msgspec.json.encode(Principal(org=ORG, sub=USER)).decode()}
    body = msgspec.json.encode({"grant": roomy_grant(USER) | {"grant_id": grant_id}})
    reply = await nc.request("tether.poa.issue", body, timeout=5, headers=person)
    assert not reply.headers, reply.data  # a problem carries its status in a header
    return msgspec.json.decode(reply.data)["id"]


def main() -> None:
    with stack() as s:
        _, _, room = a_room(s)
        s.service("poa")
        tables = {
            "tether.rooms.ask": uvloop.run(asked(s.nats_url, s.passwords, room)),
            "tether.poa.act ($1, allowed)": uvloop.run(acted(s.nats_url, s.passwords)),
        }

    for subject, results in tables.items():
        print(f"\n{subject} on the bus, {SECONDS} s each")
        print("| request | per second | p50 ms | p99 ms |")
        print("|---|---|---|---|")
        for name, m in results.items():
            print(f"| {name} | {m['rps']:,.0f} | {m['p50_ms']:.2f} | {m['p99_ms']:.2f} |")


if __name__ == "__main__":
    main()
