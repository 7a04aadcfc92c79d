"""Phase D (poa-verifier §3 D): what the principal could say yes to; every check asks."""

from decimal import Decimal
from typing import Any

from services.poa.domain import hours
from services.poa.domain.decisions import Decision, ask
from services.poa.domain.reading import ASK, count, covers, instant, items, money, obj, sum_of
from services.poa.domain.resolve import Act
from services.poa.domain.settlement import needs_settlement, settled
from services.poa.domain.targets import admits, effective_targets

__all__ = ["first_ask", "money_rule"]


def first_ask(
    grant: dict[str, Any], act: Act, envelope: dict[str, Any], state: dict[str, Any]
) -> Decision | None:
    rule = _first_rule(grant, act, envelope, state)
    return None if rule is None else ask(rule, act.act_id)


def _first_rule(
    grant: dict[str, Any], act: Act, envelope: dict[str, Any], state: dict[str, Any]
) -> str | None:
    authority, official = act.authority, act.official
    context = obj(envelope.get("context"))
    invocation = obj(envelope.get("invocation"))
    defaults = obj(grant.get("defaults"))
    covering = [f for f in map(obj, items(grant.get("formations"))) if covers(f, act.act_id)]
    runners = items(state.get("trusted_runners"))

    for formation in covering:  # V21: for every act a formation covers, official or not
        if needs_settlement(formation) and not settled(
            formation, context.get("settlement"), runners
        ):
            return "not_settled"
    for formation in covering:  # V22: a human gate asks, whatever the go-ahead (before V24)
        for transition in map(obj, items(formation.get("transitions"))):
            if transition.get("authority") == "human_gate" and covers(transition, act.act_id):
                return "gate_requires_ask"
    if act.mode == ASK and official:  # V23
        return "mode_asks_each_time"
    if official and (  # V24
        authority.get("go_ahead") != "standing" or authority.get("commit") != "automatic"
    ):
        return "needs_go_ahead"
    if official and act.ceiling != "self_within_limits":  # V25
        return "ceiling_on_confirm"
    trigger = invocation.get("trigger")
    triggers = defaults.get("triggers")
    listed = ["asked"] if triggers is None else items(triggers)
    if ("asked" if trigger is None else trigger) not in listed:  # V26
        return "trigger_not_listed"
    if defaults.get("hours") is not None:  # V27
        window, now = hours.window(defaults["hours"]), instant(state.get("now"))
        if window is None or now is None or not hours.inside(window, now):
            return "outside_hours"
    if official and defaults.get("pace") != "act_then_tell":  # V28
        return "pace_asks_first"
    if not _counterparty_within(grant, authority, invocation, state):  # V29
        return "counterparty_not_in_targets"
    return money_rule(grant, act, invocation, state) or _grounding_rule(grant, act, context)


def _counterparty_within(
    grant: dict[str, Any],
    authority: dict[str, Any],
    invocation: dict[str, Any],
    state: dict[str, Any],
) -> bool:
    arguments = obj(invocation.get("arguments"))
    counterparty = arguments.get("counterparty")
    if counterparty is None and isinstance(invocation.get("target"), dict):
        counterparty = invocation["target"]
    if counterparty is None:
        return not items(authority.get("targets"))
    known = items(state.get("known_counterparties"))
    return admits(effective_targets(authority, grant), obj(counterparty), known)


def money_rule(
    grant: dict[str, Any], act: Act, invocation: dict[str, Any], state: dict[str, Any]
) -> str | None:
    arguments = obj(invocation.get("arguments"))
    limits = obj(act.authority.get("limits"))
    grant_limits = obj(obj(grant.get("defaults")).get("limits"))
    given = arguments.get("amount") is not None
    amount, currency = money(arguments.get("amount")), arguments.get("currency")

    if given:  # V30: limits that cannot be compared count as crossed
        currencies = [limits["currency"]] if limits.get("currency") is not None else []
        if any(v is not None for k, v in grant_limits.items() if k.endswith("_usd")):
            currencies.append("USD")
        if currencies and any(c != currency for c in currencies):
            return "currency_mismatch"
    per_act = _applicable(limits, "transaction_amount_lte", grant_limits, "per_act_usd", given)
    if any(amount is None or limit is None or amount > limit for limit in per_act):  # V31
        return "over_per_act_limit"
    categories = limits.get("categories_in")
    if isinstance(categories, list) and categories:  # V32
        if arguments.get("category") not in categories:
            return "category_not_allowed"
    per_month = _applicable(limits, "monthly_total_lte", grant_limits, "per_month_usd", given)
    if per_month:  # V33: the month counter is kept in USD; equal is within
        spent = money(state.get("spent_month_usd"))
        if amount is None or spent is None or currency != "USD":
            return "over_monthly_limit"
        if any(limit is None or sum_of(spent, amount) > limit for limit in per_month):
            return "over_monthly_limit"
    cap = obj(grant.get("defaults")).get("max_binding_per_day")
    if act.official and cap is not None:  # V34: the cap already reached asks
        done, cap = count(state.get("binding_acts_today")), count(cap)
        if done is None or cap is None or done + 1 > cap:
            return "over_daily_binding_acts"
    return None


def _grounding_rule(grant: dict[str, Any], act: Act, context: dict[str, Any]) -> str | None:
    grounding = obj(act.authority.get("grounding"))
    if "allowed_sources" in grounding:
        allowed = items(grounding["allowed_sources"])
    else:
        allowed = items(obj(obj(grant.get("defaults")).get("grounding")).get("allowed_sources"))
    relied = items(obj(obj(grant.get("grounding_plan")).get("relies_on")).get(act.actor))
    for source in items(context.get("evidence")):  # V35
        if source not in allowed and source not in relied:
            return "grounding_source_not_allowed"
    return None


def _applicable(
    limits: dict[str, Any], key: str, grant_limits: dict[str, Any], grant_key: str, given: bool
) -> list[Decimal | None]:
    """The authority's limit always; the grant-wide one only when an amount is given."""
    found = [limits[key]] if limits.get(key) is not None else []
    if given and grant_limits.get(grant_key) is not None:
        found.append(grant_limits[grant_key])
    return [money(limit) for limit in found]
