"""What a person asks of a Chonk that no Chonk answers: a decision the never list reserves
for a person (§2, EC-MGR-001), a ranking of people (§5.4, EC-MGR-004), and feedback about a
colleague given anonymously (§6.2, EC-MGR-005). Each is answered in the thread the Chonk
shares with the person, recorded first, and nothing is decided or kept.

A never-list question asked of any Chonk but the Chief Human Officer is handed off to it
(§8, on the bus). The Chief Human Officer then asks the person whether they want a packet
for their manager of record, and opens it on their yes, as a proposal of theirs: it waits
three days, and lapses unanswered. The packet says what they asked about, never in their
words, and recommends nothing."""

from collections.abc import Mapping
from typing import Any

from libs.contracts import chonk
from libs.contracts.principal import Principal
from services.chonk.carrying import Carrying, told, waiting
from services.chonk.domain import intents
from services.chonk.domain.types import ProposedAction, RoleCharter
from services.chonk.store import Proposal

__all__ = ["NEVER", "Declining"]

# A never-list handoff's bundle: the decision asked about, and nothing of the asker's words.
NEVER = "never:"

PACKET_OPTIONS = ("Prepare it", "No, thanks")


class Declining(Carrying):
    _charters: Mapping[str, RoleCharter]

    async def _human_decision(
        self, p: Principal, data: dict[str, Any], charter: RoleCharter, decision: str, text: str
    ) -> chonk.Heard:
        """EC-MGR-001: the reply names who decides; the Chief Human Officer, asked or
        handed the question, asks whether the person wants a packet."""
        mor_name, _ = _manager(data, p.sub)
        heard = _heard(p, text)
        answer = intents.never_answer(
            decision, chonk=charter.chonk_id, mor=mor_name, person=p.sub, receipt=heard
        )
        delivered = [
            await self._reply(p, charter, answer.text, f"never-{heard}", decision=decision)
        ]
        if charter.chonk_id == "human":
            delivered.append(await self._offer_packet(data, p.sub, decision, heard))
        for action in answer.actions:
            request = chonk.HandoffRequest(
                id=f"hof_{heard}",
                tenant_id=p.org,
                from_chonk=charter.chonk_id,
                to_chonk="human",
                reason="other",
                subject_refs=(p.sub,),
                requested_action=action.text,
                context_bundle_ref=f"{NEVER}{decision}",
                receipt_id=heard,
                correlation_id=heard,
                created_by_run_id=heard,
            )
            delivered.append(await self._hand_off(request))
        return chonk.Heard(intent="human_decision", delivered=delivered)

    async def _ranking(
        self, p: Principal, data: dict[str, Any], charter: RoleCharter, text: str
    ) -> chonk.Heard:
        """EC-MGR-004: declined plainly, offering what names no one."""
        answer = intents.ranking_declined(data.get("projects", []), p.org)
        replied = await self._reply(p, charter, answer.text, f"ranking-{_heard(p, text)}")
        return chonk.Heard(intent="ranking", delivered=[replied])

    async def _anonymous(
        self, p: Principal, data: dict[str, Any], charter: RoleCharter, text: str
    ) -> chonk.Heard:
        """EC-MGR-005: anonymous feedback is not kept; the reply offers the paths that are."""
        answer = intents.anonymous_declined(_manager(data, p.sub)[0])
        replied = await self._reply(p, charter, answer.text, f"anonymous-{_heard(p, text)}")
        return chonk.Heard(intent="anonymous_feedback", delivered=[replied])

    async def _offer_packet(
        self, data: dict[str, Any], person: str, decision: str, heard: str
    ) -> dict[str, Any]:
        """The Chief Human Officer asks `person` whether they want a packet for their
        manager of record, held as a proposal they decide: on their yes it is opened and
        the manager told that it waits."""
        mor_name, mor = _manager(data, person)
        title = self._charters["human"].title
        org = data["tenant"]
        packet = chonk.Packet(
            id=f"pkt_{heard}",
            tenant=org,
            chonk="human",
            decider=mor,
            subject=person,
            about=f"a question about {decision}",
            text=(
                f"{_name(data, person)} asked about {decision}, which you decide, and asked "
                "for this packet to talk it through with you. The Chief Human Officer "
                "recommends nothing: this is yours to decide."
            ),
            receipt=heard,
            correlation=heard,
            opened_at=self._clock(),
        )
        question = told(
            org, "human", title, person, intents.packet_offer(decision, mor_name),
            f"offer-{heard}", PACKET_OPTIONS,
        )  # fmt: skip
        held = Proposal(
            key=f"{heard}-packet", decider=person, tell=waiting(packet, title), packet=packet
        )
        action = ProposedAction(kind="PACKET", to=mor_name, receipt_id=heard)
        return await self._propose(action, held, question, to=mor)


def _heard(p: Principal, text: str) -> str:
    """What a person said, as its records name it."""
    return f"heard_{intents.digest(p.sub, text)}"


def _manager(data: dict[str, Any], person: str) -> tuple[str, str]:
    return intents.manager_of(
        person,
        people=data.get("people", {}),
        managers=data.get("managersOfRecord", {}),
        owner=data["owner"],
    )


def _name(data: dict[str, Any], person: str) -> str:
    return next((name for name, id_ in data.get("people", {}).items() if id_ == person), person)
