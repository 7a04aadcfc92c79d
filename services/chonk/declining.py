"""What a person asks of a Chonk that no Chonk answers: a decision the never list reserves
for a person (§2, EC-MGR-001), a ranking of people (§5.4, EC-MGR-004), and feedback about a
colleague given anonymously (§6.2, EC-MGR-005). Each is answered in the thread the Chonk
shares with the person, recorded first, and nothing is decided or kept.

A never-list question, or anonymous feedback that speaks of conduct or safety, asked of
any Chonk but the Chief Human Officer is handed off to it (§8, on the bus). The Chief
Human Officer then asks the person whether they want a packet for their manager of
record, and opens it on their yes, as a proposal of theirs: it waits three days, and
lapses unanswered. The packet says what they asked about or raised, never in their words,
and recommends nothing."""

from collections.abc import Mapping
from typing import Any

from libs.contracts import chonk
from libs.contracts.principal import Principal
from services.chonk.carrying import Carrying, told, waiting
from services.chonk.domain import intents
from services.chonk.domain.types import ProposedAction, RoleCharter
from services.chonk.store import Proposal

__all__ = ["PACKET", "Declining"]

# The bundle of a handoff for a packet: what it is about (a never-list decision, or
# `conduct`), and nothing of the person's words.
PACKET = "packet:"

PACKET_OPTIONS = ("Prepare it", "No, thanks")


class Declining(Carrying):
    _charters: Mapping[str, RoleCharter]

    async def _human_decision(
        self, p: Principal, data: dict[str, Any], charter: RoleCharter, decision: str, text: str
    ) -> chonk.Heard:
        """EC-MGR-001: the reply names who decides; the Chief Human Officer, asked or
        handed the question, asks whether the person wants a packet."""
        mor_name, _ = _manager(data, p.sub)
        heard = intents.heard(p.sub, text)
        answer = intents.never_answer(
            decision, chonk=charter.chonk_id, mor=mor_name, person=p.sub, receipt=heard
        )
        delivered = [
            await self._reply(p, charter, answer.text, f"never-{heard}", decision=decision),
            await self._to_human(p, data, charter, decision, heard),
        ]
        return chonk.Heard(intent="human_decision", delivered=delivered)

    async def _ranking(
        self, p: Principal, data: dict[str, Any], charter: RoleCharter, text: str
    ) -> chonk.Heard:
        """EC-MGR-004: declined plainly, offering what names no one."""
        answer = intents.ranking_declined(data.get("projects", []), p.org)
        key = f"ranking-{intents.heard(p.sub, text)}"
        replied = await self._reply(p, charter, answer.text, key)
        return chonk.Heard(intent="ranking", delivered=[replied])

    async def _anonymous(
        self, p: Principal, data: dict[str, Any], charter: RoleCharter, text: str
    ) -> chonk.Heard:
        """EC-MGR-005: anonymous feedback is not kept; the reply offers the paths that are.
        Conduct or safety goes on to the Chief Human Officer, which offers a packet for the
        manager of record."""
        conduct, heard = bool(intents.CONDUCT.search(text)), intents.heard(p.sub, text)
        said = intents.anonymous_declined(
            _manager(data, p.sub)[0], conduct=conduct, chonk=charter.chonk_id
        )
        delivered = [await self._reply(p, charter, said, f"anonymous-{heard}")]
        if conduct:
            delivered.append(await self._to_human(p, data, charter, "conduct", heard))
        return chonk.Heard(intent="anonymous_feedback", delivered=delivered)

    async def _to_human(
        self, p: Principal, data: dict[str, Any], charter: RoleCharter, kind: str, heard: str
    ) -> dict[str, Any]:
        """A packet for the person's manager of record, offered by the Chief Human Officer:
        at once where it is the one asked, else handed off to it (§8, on the bus)."""
        if charter.chonk_id == "human":
            return await self._offer_packet(data, p.sub, kind, heard)
        mor_name, _ = _manager(data, p.sub)
        handoff = intents.packet_handoff(kind, person=p.sub, mor=mor_name, receipt=heard)
        request = chonk.HandoffRequest(
            id=f"hof_{heard}",
            tenant_id=p.org,
            from_chonk=charter.chonk_id,
            to_chonk="human",
            reason="other",
            subject_refs=(p.sub,),
            requested_action=handoff.text,
            context_bundle_ref=f"{PACKET}{kind}",
            receipt_id=heard,
            correlation_id=heard,
            created_by_run_id=heard,
        )
        return await self._hand_off(request)

    async def _offer_packet(
        self, data: dict[str, Any], person: str, kind: str, heard: str
    ) -> dict[str, Any]:
        """The Chief Human Officer asks `person` whether they want a packet for their
        manager of record, held as a proposal they decide: on their yes it is opened and
        the manager told that it waits."""
        mor_name, mor = _manager(data, person)
        title = self._charters["human"].title
        org = data["tenant"]
        offer = intents.packet_offer(kind, name=_name(data, person), mor=mor_name)
        packet = chonk.Packet(
            id=f"pkt_{heard}",
            tenant=org,
            chonk="human",
            decider=mor,
            subject=person,
            about=offer.about,
            text=offer.text,
            receipt=heard,
            correlation=heard,
            opened_at=self._clock(),
        )
        question = told(
            org, "human", title, person, offer.question, f"offer-{heard}", PACKET_OPTIONS
        )
        held = Proposal(
            key=f"{heard}-packet", decider=person, tell=waiting(packet, title), packet=packet
        )
        action = ProposedAction(kind="PACKET", to=mor_name, receipt_id=heard)
        return await self._propose(action, held, question, to=mor)


def _manager(data: dict[str, Any], person: str) -> tuple[str, str]:
    return intents.manager_of(
        person,
        people=data.get("people", {}),
        managers=data.get("managersOfRecord", {}),
        owner=data["owner"],
    )


def _name(data: dict[str, Any], person: str) -> str:
    return next((name for name, id_ in data.get("people", {}).items() if id_ == person), person)
