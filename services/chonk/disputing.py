"""A person telling a Chonk that what it said is not true (§11, RC-MGR-02). Detect: the
message is read as a dispute, counted, and recorded as a review item. Contain: the Chonk
annotates its thread with the receipt of the last message it delivered to that person and
offers to correct it; a fact kept about them is theirs to redact on their knows page. The
Chonk does not argue, and changes nothing itself.

A person texting "WHY" after a text that ended "Reply WHY for sources" (§7's SMS surface,
which shows no markers) is answered with that text's numbered sources."""

from typing import Any

import msgspec
from prometheus_client import Counter

from libs.contracts import chonk
from libs.contracts.principal import Principal
from services.chonk.carrying import Carrying, told
from services.chonk.domain import intents, receipts
from services.chonk.domain.types import Receipt, RoleCharter

__all__ = ["DISPUTED", "Disputing"]

DISPUTED = Counter(
    "tether_chonk_disputed",
    "Messages a person told a Chonk were not true: review items (RC-MGR-02).",
    ["chonk"],
)


class Disputing(Carrying):
    async def _why(
        self,
        p: Principal,
        charter: RoleCharter,
        text: str,
        replying: tuple[str, int] | None = None,
    ) -> chonk.Heard:
        """§7: "WHY" answered with the numbered sources of the Chonk's last text to the
        person that ended "Reply WHY", in at most three SMS segments; else of the run's
        message they answer in the thread, or of the last it told them."""
        sent_them = await self._sent_them(p, charter)
        answered = _answered(sent_them, replying)
        if answered is not None:
            receipt: Receipt | None = _receipt(answered[0])
        else:  # a text that ended "Reply WHY", else the last it told them
            receipt = await self._store.why(p.org, p.sub, charter.chonk_id)
            if receipt is None and sent_them:
                receipt = _receipt(sent_them[0][0])
        if receipt is None:
            said, key = "Nothing I've told you has sources to show.", "why-none"
        else:
            said, key = "".join(receipts.why(receipt)), f"why-{receipt.id}"
        replied = await self._reply(p, charter, said, f"{key}-{intents.digest(p.sub, text)}")
        return chonk.Heard(intent="why", delivered=[replied])

    async def _disputed(
        self,
        p: Principal,
        charter: RoleCharter,
        text: str,
        replying: tuple[str, int] | None = None,
    ) -> chonk.Heard:
        """The Chonk's message the person answers in the thread (`replying`), else its last
        to them, annotated with its receipt; nothing when it has told them nothing."""
        DISPUTED.labels(charter.chonk_id).inc()
        sent_them = await self._sent_them(p, charter)
        told_them = _answered(sent_them, replying) or next(iter(sent_them), None)
        if told_them is None:
            return chonk.Heard(intent="disputed")
        report, sent = told_them
        receipt = _receipt(report)
        annotation = (
            "You said this is not right. It was based on these, as they stood then:\n"
            f"{receipts.block(receipt)}\n"
            "Tell me what is wrong and I will correct it. If it is something kept about you, "
            "you can redact it on your knows page."
        )
        said = intents.digest(p.sub, text)
        key = f"disputed-{report.id}-{said}"
        async with self._trail.change(
            p.org, actor=p, action="chonk.claim.disputed", target=report.id,
            data={"room": sent["room"], "seq": sent["seq"], "chonk": charter.chonk_id},
        ):  # fmt: skip
            await self._store.put_disputed(p.org, report, said)
            annotated = await self._send(
                told(p.org, charter.chonk_id, charter.title, p.sub, annotation, key)
            )
        return chonk.Heard(
            intent="disputed",
            delivered=[
                {"kind": "ANNOTATE", "to": p.sub, "run": report.id,
                 "room": annotated.room, "seq": annotated.seq}
            ],
        )  # fmt: skip

    async def _sent_them(
        self, p: Principal, charter: RoleCharter
    ) -> list[tuple[chonk.RunReport, dict[str, Any]]]:
        """What the Chonk's runs told the person, the last first, with where each was told."""
        return [
            (report, sent)
            for report in await self._store.told(p.org, p.sub, charter.chonk_id)
            for sent in report.delivered
            if sent.get("to") == p.sub and "room" in sent
        ]


def _answered(
    sent_them: list[tuple[chonk.RunReport, dict[str, Any]]], replying: tuple[str, int] | None
) -> tuple[chonk.RunReport, dict[str, Any]] | None:
    """The run's message the person answers in the thread, if they name one a run told."""
    return next((t for t in sent_them if (t[1]["room"], t[1]["seq"]) == replying), None)


def _receipt(report: chonk.RunReport) -> Receipt:
    return msgspec.convert(report.receipt, Receipt)
