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
        answered = replying and await self._told(p, charter, replying)
        if answered:
            receipt: Receipt | None = _receipt(answered[0])
        else:  # a text that ended "Reply WHY", else the last it told them
            receipt = await self._store.why(p.org, p.sub, charter.chonk_id)
            if receipt is None and (last := await self._told(p, charter)) is not None:
                receipt = _receipt(last[0])
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
        answered = replying and await self._told(p, charter, replying)
        told_them = answered or await self._told(p, charter)
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

    async def _told(
        self, p: Principal, charter: RoleCharter, replying: tuple[str, int] | None = None
    ) -> tuple[chonk.RunReport, dict[str, Any]] | None:
        """The run's message the person answers in the thread (`replying`), if a run of
        the Chonk's told it them; without `replying`, the last one told them. With where it
        is, and its run's report, read for that one alone (a run still under way has
        none yet)."""
        sent_them = [
            (run, sent)
            for run, sents in await self._store.told(p.org, p.sub, charter.chonk_id)
            for sent in sents
            if replying is None or (sent["room"], sent["seq"]) == replying
        ]
        for run, sent in sent_them:
            if (report := await self._store.report(p.org, run)) is not None:
                return report, sent
        return None


def _receipt(report: chonk.RunReport) -> Receipt:
    return msgspec.convert(report.receipt, Receipt)
