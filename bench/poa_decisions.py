"""In-process PoA decisions against Cedar (cedarpy) deciding the equivalent policy, and
containment along a chain five grants deep.

    .venv/bin/python -m bench.poa_decisions

Both sides start from request JSON bytes and end at a decision. Cedar is used its fastest
way: the policy set and the entities parsed once, each request decoded and decided. Ours
decides the official `allow_within_limits` case, checking every rule of the spec; the
grant is read once (as Cedar's policies are), the envelope and state decoded per request.
A second row decodes the whole stateless request, grant included, every time.
"""

import copy
import gc
import itertools
import json

import cedarpy
import msgspec

from bench.common import ROOT, percentile, timed
from libs.contracts import codec
from libs.contracts.poa import VerifyRequest
from services.poa.domain import contain, verify

VECTORS = json.loads((ROOT / "vectors" / "poa-1.3-official.json").read_text())
CASE = next(c for c in VECTORS["verification"] if c["id"] == "allow_within_limits")
ROUNDS, PER_ROUND = 10, 5000

# allow_within_limits, in Cedar: the agent may buy from the named merchants within the
# per-act, monthly and daily limits, for the listed category, triggers and evidence, inside
# the grant's validity; the denied acts are forbidden, and so is everything once revoked.
POLICIES = """
permit(
  principal == Agent::"urn:example:agent:a_456",
  action == Action::"shop.buy",
  resource in Targets::"merchant-named"
) when {
  context.currency == "USD" &&
  context.amount_cents <= 10000 &&
  context.spent_month_cents + context.amount_cents <= 80000 &&
  context.category == "household" &&
  context.binding_acts_today + 1 <= 5 &&
  ["asked", "routine"].contains(context.trigger) &&
  ["preferences", "accounts"].containsAll(context.evidence) &&
  context.now >= 1790640000 && context.now < 1791244800
};
forbid(principal, action in [Action::"shop.subscribe", Action::"money.send"], resource);
forbid(principal, action, resource) when { context.revoked };
"""
ENTITIES = [
    {"uid": {"type": "Targets", "id": "merchant-named"}, "attrs": {}, "parents": []},
    *({"uid": {"type": "Merchant", "id": m}, "attrs": {},
       "parents": [{"type": "Targets", "id": "merchant-named"}]} for m in ("amazon", "costco")),
    {"uid": {"type": "Agent", "id": "urn:example:agent:a_456"}, "attrs": {}, "parents": []},
]  # fmt: skip
CEDAR_REQUEST = json.dumps({
    "principal": {"type": "Agent", "id": "urn:example:agent:a_456"},
    "action": {"type": "Action", "id": "shop.buy"},
    "resource": {"type": "Merchant", "id": "amazon"},
    "context": {"currency": "USD", "amount_cents": 4000, "spent_month_cents": 15000,
                "category": "household", "binding_acts_today": 1, "trigger": "asked",
                "evidence": ["preferences"], "now": 1790856000, "revoked": False},
}).encode()  # fmt: skip


def contenders() -> dict[str, object]:
    policies = cedarpy.PolicySet.from_str(POLICIES)
    entities = cedarpy.Entities.from_json_str(json.dumps(ENTITIES))
    decode_any = codec.decoder().decode
    decode_request = codec.decoder(VerifyRequest).decode
    grant = decode_any(json.dumps(CASE["grant"]).encode())
    act_bytes = json.dumps({"envelope": CASE["envelope"], "state": CASE["state"]}).encode()
    whole = json.dumps({k: CASE[k] for k in ("grant", "parents", "envelope", "state")}).encode()

    def cedar() -> str:
        request = msgspec.json.decode(CEDAR_REQUEST)
        return cedarpy.is_authorized(request, policies, entities).decision

    def tether() -> str:
        act = decode_any(act_bytes)
        return verify(grant, [], act["envelope"], act["state"]).decision

    def tether_whole() -> str:
        r = decode_request(whole)
        return verify(r.grant, r.parents, r.envelope, r.state).decision

    assert str(cedar()) == "Decision.Allow" and tether() == tether_whole() == "ALLOW"
    return {
        "cedar (cedarpy)": cedar,
        "tether verify": tether,
        "tether verify, whole request": tether_whole,
    }


def decisions() -> None:
    runs = contenders()
    samples: dict[str, list[float]] = {name: [] for name in runs}
    gc.collect()
    for _ in range(ROUNDS):  # interleaved, so both see the same machine
        for name, fn in runs.items():
            samples[name] += timed(fn, PER_ROUND)
    print(f"allow_within_limits, {ROUNDS} x {PER_ROUND} decisions each, interleaved")
    print("| decider | decisions/s | p50 µs | p99 µs |")
    print("|---|---|---|---|")
    rate = {}
    for name, s in samples.items():
        rate[name] = len(s) / sum(s)
        print(f"| {name} | {rate[name]:,.0f} | {percentile(s, 50) * 1e6:.1f} "
              f"| {percentile(s, 99) * 1e6:.1f} |")  # fmt: skip
    cedar = rate["cedar (cedarpy)"]
    for name in list(runs)[1:]:
        print(f"{name}: {rate[name] / cedar:.2f}x Cedar's decisions per second")


def chain(depth: int) -> list[dict]:
    """A root and its descendants, each a contained child of the one before."""
    root = copy.deepcopy(next(c for c in VECTORS["containment"] if c["id"] == "child_ok")["parent"])
    root["delegation"]["max_depth"] = depth - 1
    grants = [root]
    for i in range(1, depth):
        parent = grants[-1]
        child = copy.deepcopy(parent)
        child["grant_id"] = f"poa_child_{i}"
        child["delegate"] = {"sub": f"urn:example:agent:helper_{i}", "name": "helper"}
        child["delegation"]["chain"] = [
            *parent["delegation"]["chain"],
            {"grant_id": parent["grant_id"], "delegate_sub": parent["delegate"]["sub"]},
        ]
        child["delegation"]["allowed"] = i < depth - 1
        grants.append(child)
    return grants


def containment() -> None:
    grants = chain(5)
    pairs = list(itertools.pairwise(grants))
    assert all(contain(p, c).ok for p, c in pairs)
    whole = timed(lambda: [contain(p, c) for p, c in pairs], 20000)
    envelope = copy.deepcopy(CASE["envelope"])
    envelope["invocation"]["actor"]["sub"] = grants[-1]["delegate"]["sub"]
    state = CASE["state"]
    assert verify(grants[-1], grants[:-1], envelope, state).rule_id == "standing_within_limits"
    lineage = timed(lambda: verify(grants[-1], grants[:-1], envelope, state), 20000)
    print("\nchain five grants deep (four parent/child pairs)")
    print("| work | p50 µs | p99 µs |")
    print("|---|---|---|")
    print(f"| contain() on all four pairs | {percentile(whole, 50) * 1e6:.1f} "
          f"| {percentile(whole, 99) * 1e6:.1f} |")  # fmt: skip
    print(f"| verify() of the fifth grant, lineage included | {percentile(lineage, 50) * 1e6:.1f} "
          f"| {percentile(lineage, 99) * 1e6:.1f} |")  # fmt: skip


if __name__ == "__main__":
    decisions()
    containment()
