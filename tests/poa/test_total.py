"""No input makes verify or contain raise: mutated official vectors still get a decision."""

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.poa.domain import ALLOW, ASK_USER, DENY, Containment, Decision, contain, verify
from tests.poa.vectors import OFFICIAL, case

DECISIONS = {ALLOW, ASK_USER, DENY}

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.decimals(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["1.3", "shop.buy", "urn:example:agent:a_456", "USD", "09:00", "2026-10-01"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def _deep(depth: int) -> Any:
    nested: Any = "bottom"
    for i in range(depth):
        nested = [nested] if i % 2 else {"k": nested}
    return nested


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix]
    if len(prefix) > 12:  # not into a deep nest an earlier step made
        return found
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _paths(value, (*prefix, i))
    return found


def _mutate(document: Any, path: tuple, action: str, value: Any) -> Any:
    if not path:
        return value
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    if action == "delete" and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return document


@st.composite
def mutated(draw: st.DrawFn, section: str) -> dict[str, Any]:
    vector = copy.deepcopy(draw(st.sampled_from(OFFICIAL[section])))
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(_paths(vector)))
        action = draw(st.sampled_from(["delete", "replace", "deep"]))
        value = _deep(draw(st.integers(50, 3000))) if action == "deep" else draw(values)
        vector = _mutate(vector, path, action, value)
    return vector


def _part(vector: Any, key: str) -> Any:
    return vector.get(key) if isinstance(vector, dict) else None


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated("verification"))
def test_verify_always_answers_a_decision_with_a_rule_id(vector):
    parts = [_part(vector, k) for k in ("grant", "parents", "envelope", "state")]
    decision = verify(*parts)
    assert isinstance(decision, Decision)
    assert decision.decision in DECISIONS
    assert isinstance(decision.rule_id, str) and decision.rule_id


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated("containment"))
def test_contain_always_answers(vector):
    result = contain(_part(vector, "parent"), _part(vector, "child"))
    assert isinstance(result, Containment)
    assert result.ok == (not result.violations)
    assert all(isinstance(v, str) and v for v in result.violations)


@settings(max_examples=200, deadline=None)
@given(mutated("verification"))
def test_a_grant_that_is_not_verified_in_carrier_mode_is_always_denied(vector):
    """Failing closed: whatever else changed, an unauthenticated carrier ends it."""
    if not isinstance(vector, dict):
        return
    state = vector.get("state") if isinstance(vector.get("state"), dict) else {}
    state["authenticated_grant_ids"] = []
    decision = verify(vector.get("grant"), vector.get("parents"), vector.get("envelope"), state)
    assert (decision.decision, decision.rule_id) == (DENY, "not_authenticated")


class _Unreadable:
    """A value no rule can read: comparing it fails (it cannot come from JSON; it stands
    for whatever a future shape might make a rule trip on)."""

    def __eq__(self, other: object) -> bool:
        raise ValueError("unreadable")

    __ne__ = __eq__  # type: ignore[assignment]
    __hash__ = None  # type: ignore[assignment]


def test_verify_fails_closed_as_malformed_input_when_a_rule_cannot_read_its_input():
    vector = case("verification", "allow_within_limits")
    vector["grant"]["poa_version"] = _Unreadable()
    decided = verify(vector["grant"], vector["parents"], vector["envelope"], vector["state"])
    assert (decided.decision, decided.rule_id) == ("DENY", "malformed_input")


def test_contain_fails_closed_as_malformed_input_when_a_rule_cannot_read_its_input():
    vector = copy.deepcopy(OFFICIAL["containment"][0])
    vector["child"]["principal"]["sub"] = _Unreadable()
    assert contain(vector["parent"], vector["child"]) == Containment(
        ok=False, violations=("malformed_input",)
    )
