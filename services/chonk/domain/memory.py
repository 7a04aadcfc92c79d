"""Memory (§6): the fact schema, who may write which kind, its visibility and retention,
what may never be stored, and what a person may do with a fact about them."""

import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Literal

import msgspec

from services.chonk.domain.grounding import FORBIDDEN, naming, statements
from services.chonk.domain.types import SourceRef

__all__ = [
    "KINDS",
    "MemoryFact",
    "MemoryRefused",
    "Redacted",
    "committed",
    "held",
    "owner_reports",
    "redacted",
]

Kind = Literal[
    "preference", "working_agreement", "commitment", "blocker_history", "signal",
    "feedback_given", "feedback_received", "growth_plan", "recognition", "consideration",
    "decision_ref", "owner_report",
]  # fmt: skip
Visibility = Literal["self", "self_mor", "self_owner", "org_public"]
ANY, EXECUTOR, ANALYST = "any managing Chonk", "executor", "analyst runs"
# Who writes blocker_history: §6.2 names build, ops and revenue; §10's check-in has human
# write one too.
CHASERS = frozenset({"build", "ops", "revenue", "human"})
_DAY = timedelta(days=1)


class _Rule(msgspec.Struct, frozen=True):
    writers: frozenset[str] | str
    visibility: Visibility
    keep: timedelta | None  # None: until offboarded
    redaction: Literal["immediate", "annotate", "none", "editable"]


# §6.2, row by row.
KINDS: Mapping[str, _Rule] = {
    "preference": _Rule(frozenset({"human", "ops"}), "self", None, "immediate"),
    "working_agreement": _Rule(frozenset({"human"}), "self", None, "immediate"),
    "commitment": _Rule(ANY, "self", 90 * _DAY, "immediate"),
    "blocker_history": _Rule(CHASERS, "self", 90 * _DAY, "immediate"),
    "signal": _Rule(ANALYST, "self", 90 * _DAY, "immediate"),
    "feedback_given": _Rule(frozenset({"human"}), "self_mor", 730 * _DAY, "annotate"),
    "feedback_received": _Rule(frozenset({"human"}), "self", 730 * _DAY, "annotate"),
    "growth_plan": _Rule(frozenset({"human"}), "self_mor", None, "editable"),
    "recognition": _Rule(ANY, "org_public", 730 * _DAY, "immediate"),
    "consideration": _Rule(frozenset({"human", "ops"}), "self", 90 * _DAY, "immediate"),
    "decision_ref": _Rule(EXECUTOR, "self_owner", 7 * 365 * _DAY, "none"),
    "owner_report": _Rule(EXECUTOR, "self_owner", 730 * _DAY, "none"),
}
# §6.3: health and personal life only as a consideration, in the person's own words.
_ONLY_AS_CONSIDERATION = {"health", "personal life"}


class MemoryRefused(ValueError):
    """A fact the commit does not store, and why."""


class MemoryFact(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel", kw_only=True
):
    id: str
    tenant_id: str
    subject_id: str
    kind: Kind
    content: str
    source: SourceRef
    shared_by: str  # 'self' | 'work_system' | 'chonk' | a person id
    visibility: Visibility = "self"
    expires_at: datetime | None = None
    written_by_run_id: str
    written_by_chonk_id: str
    used_for: tuple[str, ...] = ()
    evidence: tuple[SourceRef, ...] = ()
    subject_response: str | None = None
    redacted_at: datetime | None = None


def committed(
    fact: MemoryFact, *, writer: str, manages: bool, consent: bool, now: datetime
) -> MemoryFact:
    """The fact as stored (§6.5): its writer allowed for its kind, nothing §6.3 forbids, a
    consideration only with the person's yes, feedback only with evidence (attributed, and
    a path for any concern); visibility and expiry stamped from the table."""
    rule = KINDS[fact.kind]
    if rule.writers == ANY and not manages:
        raise MemoryRefused(f"{writer} does not manage {fact.subject_id}: no {fact.kind}")
    if rule.writers in (EXECUTOR, ANALYST) and writer != rule.writers:
        raise MemoryRefused(f"{fact.kind} is written by the {rule.writers} only")
    if isinstance(rule.writers, frozenset) and writer not in rule.writers:
        raise MemoryRefused(f"{writer} may not write {fact.kind}")
    for name, pattern in FORBIDDEN.items():
        if fact.kind == "consideration" and name in _ONLY_AS_CONSIDERATION:
            continue
        if found := pattern.search(fact.content):
            raise MemoryRefused(f"never stored ({name}): {found.group(0)!r}")
    if fact.kind == "consideration" and not consent:
        raise MemoryRefused("a consideration needs the person's yes to being remembered")
    if fact.kind.startswith("feedback_"):
        if not fact.evidence:
            raise MemoryRefused("feedback needs at least one evidence source")
        if fact.kind == "feedback_received" and fact.shared_by in ("self", "chonk", ""):
            raise MemoryRefused("peer feedback is stored only attributed to the peer")
        if "concern" in fact.content.lower() and "path:" not in fact.content.lower():
            raise MemoryRefused("a concern is stored only with its path")
    keep = None if rule.keep is None else now + rule.keep
    return msgspec.structs.replace(fact, visibility=rule.visibility, expires_at=keep)


def held(fact: MemoryFact, now: datetime) -> bool:
    """Whether the fact is still kept: past its expiry it is gone, read by no one, whether
    or not the server has removed it yet."""
    return fact.expires_at is None or fact.expires_at > now


def owner_reports(
    text: str, people: Mapping[str, str], *, source: SourceRef, run: str, tenant: str
) -> list[MemoryFact]:
    """Symmetry (§6.5): anything written to the owner about a person is that person's
    owner_report fact, verbatim, in the same commit: the statements (paragraphs, items of
    a list) that name them, and nothing said of anyone else (§9: "the paragraphs about Ana
    and Lena produce owner_report facts for each of them"; Lena's packet is in no one
    else's memory). `people`: name -> person id, found as `grounding.naming` finds it."""
    said = statements(text)
    reports = []
    for name, person in people.items():
        named = naming(name)
        about = [s for s in said if named.search(s)]
        if not about:
            continue
        reports.append(
            MemoryFact(
                id="mem_" + re.sub(r"[^A-Za-z0-9]", "_", f"{run}_{person}"),
                tenant_id=tenant,
                subject_id=person,
                kind="owner_report",
                content="\n\n".join(about),
                source=source,
                shared_by="chonk",
                visibility="self_owner",
                written_by_run_id=run,
                written_by_chonk_id="executor",
            )
        )
    return reports


class Redacted(msgspec.Struct, frozen=True):
    fact: MemoryFact
    decision: str | None  # a decision opened for the manager of record, if any


def redacted(fact: MemoryFact, response: str, now: datetime) -> Redacted:
    """What a person's redaction does: gone at once where they may (the fact keeps that
    it was redacted, none of its words); feedback is annotated with their words and its
    deletion becomes the MoR's decision (EC-MGR-006)."""
    match KINDS[fact.kind].redaction:
        case "immediate" | "editable":
            return Redacted(msgspec.structs.replace(fact, content="", redacted_at=now), None)
        case "annotate":
            annotated = msgspec.structs.replace(fact, subject_response=response)
            return Redacted(annotated, f"delete {fact.id}? asked by {fact.subject_id}")
    return Redacted(msgspec.structs.replace(fact, subject_response=response), None)
