"""What reading whether an org's agent stands costs a request that acts as one: `GET
/v1/rooms` through the gateway with a person's token, and with a token acting as a bot of
their org (the gateway reads the bot at the agents bucket's leader first), in alternating
rounds of wrk at 1 connection and at 50.

One replica each of rooms, agents and audit, each in its own process.

    .venv/bin/python -m bench.org_agent
"""

import asyncio
import json
import time
import urllib.request

import nats

from bench.common import free_port, median, stack, wrk
from libs.contracts.agents import PLAN, SetPlan
from libs.contracts.permissions import OPERATOR, inbox_prefix
from libs.contracts.principal import Principal
from libs.runtime.calls import call
from libs.runtime.consumer import SYSTEM_ORG
from services.gateway.tokens import mint

ORG, USER, BOT = "bench", "bench/ada", "bot:bench:researcher"
ROUNDS = 3


async def on_team_plan(url: str, password: str) -> None:
    nc = await nats.connect(
        url, user=OPERATOR, password=password, inbox_prefix=inbox_prefix(OPERATOR)
    )
    by = Principal(org=SYSTEM_ORG, sub=OPERATOR)
    await call(nc, PLAN, SetPlan(org=ORG, plan="team"), caller=OPERATOR, principal=by)
    await nc.close()


def main() -> None:
    with stack() as s:
        for name in ("audit", "rooms", "agents"):
            s.service(name)
        port = free_port()
        s.gateway(port)
        asyncio.run(on_team_plan(s.nats_url, s.passwords[OPERATOR]))
        key, now = s.home.jwt_key(), int(time.time())
        admin = mint(key, org=ORG, user=f"{ORG}/root", roles=("admin",), now=now)
        made = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/agents",
            data=json.dumps({"persona": "researcher", "kind": "bot"}).encode(),
            headers={"Authorization": f"Bearer {admin}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(made) as response:
            assert json.load(response)["id"] == BOT
        tokens = {
            "a person": mint(key, org=ORG, user=USER, now=int(time.time())),
            "a bot of their org": mint(key, org=ORG, user=USER, act=BOT, now=int(time.time())),
        }
        url = f"http://127.0.0.1:{port}/v1/rooms"
        runs: dict[tuple[int, str], list[dict[str, float]]] = {}
        for connections in (1, 50):
            for _ in range(ROUNDS):  # alternate, so both see the same machine
                for name, token in tokens.items():
                    headers = {"Authorization": f"Bearer {token}"}
                    result = wrk(url, connections=connections, headers=headers)
                    runs.setdefault((connections, name), []).append(result)
    print(f"GET /v1/rooms, {ROUNDS} alternating rounds of wrk -t1 -d10s each; medians")
    print("| connections | token of | requests/s | p50 ms | p99 ms | non-2xx |")
    print("|---|---|---|---|---|---|")
    for (connections, name), results in runs.items():
        m = {k: median([r[k] for r in results]) for k in results[0]}
        print(
            f"| {connections} | {name} | {m['rps']:.0f} | {m['p50_ms']:.2f} "
            f"| {m['p99_ms']:.2f} | {m['non_2xx']:.0f} |"
        )


if __name__ == "__main__":
    main()
