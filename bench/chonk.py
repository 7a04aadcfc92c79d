"""The harness's own cost (issue 13's figures), in one process with no server:

overhead    one run of §10's check-in through the harness (planner, two analysts,
            writer, every check, the receipt) with a model that answers at once,
            against the same four model answers asked with no harness around them;
            the goal is under 5% of a 1 s model call at p99 (50 ms)
grounding   §9's owner update (15 sources) checked, per second

.venv/bin/python -m bench.chonk
"""

import time
from datetime import UTC, datetime

import uvloop

from bench.common import percentile
from libs.model import Prompt, Scripted
from services.chonk.domain import grounding
from services.chonk.domain.prompt import TenantDirection
from services.chonk.domain.run import configure
from services.chonk.domain.types import Draft, Receipt, SourceRef
from services.chonk.harness import run
from services.chonk.main import shipped
from services.chonk.simulations import run_of, script, tenant

RUNS, CHECKS = 2000, 5000


async def overhead() -> dict[str, list[float]]:
    charters, _ = shipped()
    data = tenant("sim-lanternfish")["runs"]
    spec = data["checkin_ana"]
    r = spec["run"]
    model = Scripted(script(spec["script"]))
    asked = [f"sub-agent: {k.split(':')[0]}; step: {k.split(':')[1]}" for k in spec["script"]]
    the_run = run_of(r, 0.7)  # §10: "tone 0.7, context checkin"
    now = datetime.now(UTC)
    out: dict[str, list[float]] = {"one run through the harness": [], "floor: the four answers": []}
    for _ in range(RUNS):
        start = time.perf_counter()
        await run(
            the_run,
            charter=charters["human"],
            config=configure(charters["human"]),
            model=model,
            direction=TenantDirection(),
            bundle={"subject": "ana"},
            now=now,
        )
        out["one run through the harness"].append(time.perf_counter() - start)
        start = time.perf_counter()
        for task in asked:
            await model.reply(Prompt(system=task))
        out["floor: the four answers"].append(time.perf_counter() - start)
    return out


def checks() -> float:
    owner = tenant("sim-lanternfish")["runs"]["owner_update"]
    body = owner["script"]["writer:update"][0]["body"]
    now = datetime.now(UTC)
    receipt = Receipt(
        id="r",
        run_id="r",
        tenant_id="t",
        created_at=now,
        sources=tuple(
            SourceRef(n=n, kind="mirror", ref="x", label="x", as_of=now) for n in range(1, 16)
        ),
    )
    draft = Draft(step_id="w", surface="app", body=body)
    names = set(owner["run"]["names"]) - {owner["run"]["recipient"]}
    assert grounding.faults(draft, receipt, names=names) == []
    start = time.perf_counter()
    for _ in range(CHECKS):
        grounding.faults(draft, receipt, names=names)
    return CHECKS / (time.perf_counter() - start)


def main() -> None:
    results = uvloop.run(overhead())
    print(f"§10's check-in, {RUNS} runs, a model that answers at once")
    print("| path | p50 ms | p99 ms |")
    print("|---|---|---|")
    for name, values in results.items():
        ms = [v * 1e3 for v in values]
        print(f"| {name} | {percentile(ms, 50):.3f} | {percentile(ms, 99):.3f} |")
    p99 = percentile(results["one run through the harness"], 99) * 1e3
    print(f"\nharness p99 as a share of a 1 s model call: {p99 / 1000:.2%} (goal < 5%)")
    print(f"grounding checks of §9's owner update: {checks():,.0f} per second")


if __name__ == "__main__":
    main()
