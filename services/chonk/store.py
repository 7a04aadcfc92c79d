"""The chonk service's buckets:

    chonk-runs     <org>.<run id>                       a run's report
                   told.<org>.<person>.<chonk>.<run>    where each message a run told the
                                                        person is
                   listed.<org>.<run>                   a run as the org's list names it
                   indexed.reports.upto                 the last report a start gave those
                                                        two keys, by its stream sequence
                   claimed.<org>.<run id>               a timed or handed-off run, taken once
                   declined.<org>.<handoff id>          a handoff its receiver declined
                   accepted.<org>.<handoff id>          one it accepted
                   proposed.<room>.<seq>                an action held for its decider's yes
                   proposing.<org>.<action key>         when its question opened
                   chase.<org>.<run>                    a chase: the stage taken, who answered
                   chased.<room>.<seq>                  a chase's question: which chase
                   packet.<org>.<decider>.<id>          a HUMAN_ONLY packet, for its decider
                   cover.<org>.<shift>                  a call-out's cover: who took it
                   offered.<room>.<seq>                 a cover question: which shift, to whom
                   outside.<org>.<chonk>                when it proposed outside its allowlist
                   modes.<org>.<chonk>                  its function modes (RC-MGR-01's PROPOSE)
                   voice.<org>.tenant                   the org's voice for its Chonks: the
                                                        tone dial, how each is called and
                                                        drawn (§1, §7)
                   cadence.<org>.<cadence>              a cadence that runs: since when
                   why.<org>.<person>.<chonk>           what its last text to them that ends
                                                        "Reply WHY" rests on: its sources
                   disputed.<org>.<run>.<digest>        a run's message said not to be so, by
                                                        whom and in what words digested: when
                                                        that run ran (a run asked again is
                                                        another's), RC-MGR-02's review item
    chonk-memory   facts.<org>.<person>.<fact id>      a fact about a person
                   reads.<org>.<person>                 who read that person's facts, for what:
                                                        the latest 200 reads

Every key names the org, and a person's the person (but the mark that the reports were
indexed, which is the bucket's).

A fact is removed by the server at its expiry (§6.2's retention), and each of its writes
rolls up the ones before it: what a person redacted is in no revision of the bucket.

What has settled is kept for a while (`TETHER_SETTLED_KEPT`, a week by default) and then
removed by the server: a run's claim once its report is stored, a cover once it is
closed, a handoff's acceptance, when a proposal's question opened, once it has closed
(`domain/proposals.py`), and what a text that ends "Reply WHY" rests on. A released
claim, an answered proposal or a stopped cadence leaves only a marker that is removed
within the hour. Reports, declines (two Chonks disagreeing twice names no period), packets
(a decision record, kept decided once its decider says so), chases and the questions they
asked stay.

Every read has every acknowledged write in it (through the stream's leader on a replicated
bucket, `libs.runtime.leader`), and so does the entry each compare-and-set starts from: an
answer to a question just asked finds what the question holds, a decline just stored is
counted, and who took a shift is decided on the cover as it stands. Nothing here is read
often enough for the leader's cost to matter.
"""

import contextlib
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

import msgspec
from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig
from nats.js.errors import KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from libs.contracts import codec
from libs.contracts.base import key_token
from libs.contracts.chonk import (
    ActionReady,
    HandoffRequest,
    MemoryRead,
    Packet,
    RunReport,
    SetVoice,
    Trigger,
)
from libs.contracts.rooms import Tell
from libs.runtime.kv import (
    Conflict,
    Read,
    Record,
    open_bucket,
    put,
    remove,
    settle,
    swap,
    write_at,
)
from libs.runtime.leader import exact_reads, written_since
from libs.runtime.settings import SETTLED_KEPT
from services.chonk.domain import proposals
from services.chonk.domain.ladder import Chase
from services.chonk.domain.memory import MemoryFact
from services.chonk.domain.types import Receipt

__all__ = [
    "Asked",
    "CallOut",
    "ChaseState",
    "Chased",
    "ChonkStore",
    "Cover",
    "Listed",
    "Offer",
    "Proposal",
    "open_store",
]


class CallOut(msgspec.Struct, frozen=True):
    """A call-out being covered: the shift, who reported it and who is missing, by name
    for what the Chonk says and by id for whom it says it to."""

    org: str
    chonk: str
    title: str
    shift: str
    station: str
    end: datetime
    reporter: str
    reporter_name: str
    absent_name: str
    escalate_to: str


class Cover(msgspec.Struct, frozen=True, omit_defaults=True):
    """What became of a call-out: who took the shift, and whether it was closed when its
    time ran out (`escalated` if no one had taken it then)."""

    call_out: CallOut
    taken_by: str | None = None
    closed: bool = False
    escalated: bool = False


class Offer(msgspec.Struct, frozen=True):
    """A cover question: the shift it offers, and to whom."""

    org: str
    shift: str
    worker: str
    name: str


class Proposal(msgspec.Struct, frozen=True, omit_defaults=True):
    """What a PROPOSE_CONFIRM holds until its decider's yes: a message to tell, a chase to
    start, or an action for a connector; exactly one, but a packet, which comes with the
    message that tells its decider it waits."""

    key: str  # the action's, `<run>-<n>`
    decider: str
    tell: Tell | None = None
    chase: Chase | None = None
    ready: ActionReady | None = None
    offer: Offer | None = None  # the told question offers a shift: its answers are read
    # A packet the person may want for their manager (EC-MGR-001, -005): opened on their
    # yes, and `tell` tells its decider it waits.
    packet: Packet | None = None
    why: Receipt | None = None  # what `tell` rests on, for its "Reply WHY", once told

    @property
    def org(self) -> str:
        if self.ready is not None:
            return self.ready.tenant
        found = self.tell or self.chase
        assert found is not None, "a proposal holds one thing"
        return found.org


class Chased(msgspec.Struct, frozen=True):
    """A chase's question: whose chase, and whom it asked (the one who may answer it)."""

    org: str
    run: str
    asked: str


class Asked(msgspec.Struct, frozen=True):
    """A chase's question: where it was asked, and of whom."""

    room: str
    seq: int
    person: str


class ChaseState(msgspec.Struct, frozen=True, omit_defaults=True):
    taken: int = 0  # the last stage taken
    answered_by: str | None = None  # whoever answered first: the chase is over
    ended: bool = False  # a stage came due after the answer, and said so
    asked: tuple[Asked, ...] = ()  # its questions, each asked at a stage


class Listed(msgspec.Struct, frozen=True):
    """A run as the org's list names it: `ran`, when, as its receipt says it."""

    id: str
    chonk: str
    trigger: Trigger
    ran: str
    correlation: str


_fact = codec.decoder(MemoryFact)
_report = codec.decoder(RunReport)
_handoff = codec.decoder(HandoffRequest)
_proposal = codec.decoder(Proposal).decode
_chase = codec.decoder(ChaseState)
_chased = codec.decoder(Chased)
_cover = codec.decoder(Cover)
_offer = codec.decoder(Offer)
_packet = codec.decoder(Packet)
_receipt = codec.decoder(Receipt)
_voice = codec.decoder(SetVoice)
_listed = codec.decoder(Listed)
_sent = msgspec.json.Decoder(list[dict[str, Any]]).decode
_times = msgspec.json.Decoder(list[datetime]).decode
_modes = msgspec.json.Decoder(dict[str, str]).decode
_reads = msgspec.json.Decoder(list[MemoryRead])
_READS_SHOWN = 200  # a knows page's worth; the audit trail keeps every read
# A marker tells a replica behind the leader that its key is gone; past an hour it has caught up.
_MARKER_KEPT = timedelta(hours=1)
# The last report a start gave its keys, by its stream sequence.
_REPORTS_INDEXED = "indexed.reports.upto"
_since = codec.decoder(datetime | None)


class ChonkStore:
    def __init__(
        self,
        runs: KeyValue,
        memory: KeyValue,
        in_runs: Read,
        in_memory: Read,
        *,
        kept: timedelta = SETTLED_KEPT,
    ) -> None:
        """`in_runs` and `in_memory` read each bucket with every acknowledged write in it;
        what has settled is kept for `kept`."""
        self._runs, self._memory = runs, memory
        self._in_runs, self._in_memory = in_runs, in_memory
        self._kept = kept

    async def _value(self, key: str) -> bytes | None:
        """The run bucket's entry at `key`; None when there is none."""
        found = await self._in_runs(self._runs, key)
        return found[0].value if found else None

    async def put_report(self, org: str, report: RunReport) -> None:
        """The report, after its keys: one for each person it told something in a room
        (what a person asks of what a Chonk told them is looked up by them, never by
        reading the org's reports and keeping theirs), and its line in the org's list (the
        list reads those, never the reports whole)."""
        await self._put_keys(org, report)
        await put(self._runs, f"{org}.{report.id}", codec.encode(report))

    async def _put_keys(self, org: str, report: RunReport) -> None:
        told: dict[str, list[dict[str, Any]]] = {}
        for sent in report.delivered:
            if "room" in sent and "to" in sent:
                told.setdefault(sent["to"], []).append(sent)
        for person, sent_them in sorted(told.items()):
            key = f"told.{org}.{key_token(person)}.{report.chonk}.{report.id}"
            await put(self._runs, key, msgspec.json.encode(sent_them))
        listed = Listed(
            id=report.id,
            chonk=report.chonk,
            trigger=report.trigger,
            ran=report.receipt["createdAt"],
            correlation=report.correlation,
        )
        await put(self._runs, f"listed.{org}.{report.id}", codec.encode(listed))

    async def index_reports(self) -> int:
        """Every report stored since the last start's index, given its keys, in the order
        they were stored: how many were read. The mark is the last report so indexed, so
        a start reads only what came since (this release's reports, stored after their
        keys, and any a replica of the release before stored during a rollout); the first
        start of this release reads every report a release before stored. Without it,
        after an upgrade no dispute or WHY found what a run told a person, and the list
        showed none of the runs before."""
        since = int(await self._value(_REPORTS_INDEXED) or b"0")
        read = 0
        async for msg in written_since(self._runs, "*.*", since):  # a report: two tokens
            if msg.data:  # else a removal's marker
                org = msg.headers["Nats-Subject"].split(".")[2]
                await self._put_keys(org, _report.decode(msg.data))
                read += 1
            since = int(msg.headers["Nats-Sequence"])
        await put(self._runs, _REPORTS_INDEXED, str(since).encode())
        return read

    async def claim_run(self, org: str, run_id: str, now: datetime, *, lease: timedelta) -> bool:
        """True for the one caller that claims `run_id`, however many ask at once: a run
        started by a timer or a handoff, each delivered at least once, is made once. A claim
        made more than `lease` ago with no report yet is taken over: its claimer died
        mid-run (one that lives has reported, or failed and released it, long before)."""
        key, claimed = f"claimed.{org}.{run_id}", now.isoformat().encode()
        try:
            await write_at(self._runs, key, claimed, 0)
            return True
        except Conflict:
            pass
        found = await self._in_runs(self._runs, key)
        if not found:  # released since: the next delivery claims it
            return False
        if not _lapsed(found[0].value, now, lease) or await self.report(org, run_id):
            return False
        try:
            await write_at(self._runs, key, claimed, found[0].revision)
        except Conflict:  # taken over by another
            return False
        return True

    async def finish_run(self, org: str, run_id: str) -> None:
        """A claimed run that reported: its claim is kept for a while, then removed, as a
        delivery comes again within minutes, not weeks."""
        await settle(self._runs, f"claimed.{org}.{run_id}", keep=self._kept, read=self._in_runs)

    async def release_run(self, org: str, run_id: str) -> None:
        """A claimed run that failed: its redelivery may claim it again."""
        await remove(self._runs, f"claimed.{org}.{run_id}", keep=_MARKER_KEPT)

    async def judged(self, request: HandoffRequest) -> bool:
        """Whether the handoff was accepted or declined before: it is delivered again."""
        keys = (f"{judged}.{request.tenant_id}.{request.id}" for judged in ("declined", "accepted"))
        return bool(await self._in_runs(self._runs, *keys))

    async def put_accept(self, request: HandoffRequest) -> None:
        """An accepted handoff, kept for a while to be judged once (its run is claimed);
        Conflict if a delivery at the same time accepted it first."""
        key = f"accepted.{request.tenant_id}.{request.id}"
        await write_at(self._runs, key, b"", 0, keep=self._kept)

    async def put_decline(self, request: HandoffRequest) -> None:
        """A declined handoff, kept to see two Chonks disagree twice; Conflict if a
        delivery at the same time declined it first."""
        key = f"declined.{request.tenant_id}.{request.id}"
        await write_at(self._runs, key, codec.encode(request), 0)

    async def declines(self, tenant: str) -> list[HandoffRequest]:
        entries = await self._in_runs(self._runs, f"declined.{tenant}.*")
        return [_handoff.decode(e.value) for e in entries]

    async def change_cadence(
        self,
        org: str,
        name: str,
        change: Callable[[datetime | None], datetime | None],
        *,
        record: Record,
    ) -> tuple[datetime | None, datetime | None]:
        """Since when the cadence runs (None: it does not), before and after `change`. A
        stopped one leaves a marker for the hour."""
        return await swap(
            self._runs,
            f"cadence.{org}.{name}",
            change,
            decode=lambda raw: _since.decode(raw or b"null"),
            default=None,
            kept=lambda since: _MARKER_KEPT if since is None else None,
            record=record,
            read=self._in_runs,
        )

    async def running_since(self, org: str, name: str) -> datetime | None:
        """Since when the cadence runs; None when it does not."""
        return _since.decode(await self._value(f"cadence.{org}.{name}") or b"null")

    async def cadences(self, org: str) -> dict[str, datetime]:
        """The org's cadences that run, and since when."""
        found = await self._in_runs(self._runs, f"cadence.{org}.*")
        since = {e.key.rsplit(".", 1)[-1]: _since.decode(e.value or b"null") for e in found}
        return {name: at for name, at in since.items() if at is not None}

    async def put_proposal(self, room: str, seq: int, proposal: Proposal) -> None:
        """Held once. A run made again asks its question again under the same key, and the
        room answers with the question it has; one answered already leaves a marker, and is
        not held again where no answer could reach it (a create would write over it)."""
        with contextlib.suppress(KeyWrongLastSequenceError):
            await self._runs.update(f"proposed.{room}.{seq}", codec.encode(proposal), last=0)

    async def opened(self, org: str, key: str, now: datetime) -> datetime:
        """When the question of the proposal of action `key` opened (`proposals.opening`)."""
        _, after = await swap(
            self._runs,
            f"proposing.{org}.{key}",
            lambda before: proposals.opening(before, now),
            decode=_since.decode,
            default=None,
            kept=lambda _: proposals.OPEN_FOR + self._kept,
            read=self._in_runs,
        )
        assert after is not None
        return after

    async def proposal(self, room: str, seq: int) -> Proposal | None:
        """What question `seq` of `room` holds for its decider's yes, if it is a proposal."""
        raw = await self._value(f"proposed.{room}.{seq}")
        return _proposal(raw) if raw else None

    async def drop_proposal(self, room: str, seq: int) -> None:
        """An answered proposal: a later answer to its question finds none, and carries out
        nothing."""
        await remove(self._runs, f"proposed.{room}.{seq}", keep=_MARKER_KEPT)

    async def change_chase(
        self,
        org: str,
        run: str,
        change: Callable[[ChaseState], ChaseState],
        *,
        record: Record | None = None,
    ) -> tuple[ChaseState, ChaseState]:
        return await swap(
            self._runs,
            f"chase.{org}.{run}",
            change,
            decode=lambda raw: _chase.decode(raw or b"{}"),
            default=ChaseState(),
            record=record,
            read=self._in_runs,
        )

    async def chase(self, org: str, run: str) -> ChaseState:
        raw = await self._value(f"chase.{org}.{run}")
        return _chase.decode(raw or b"{}")

    async def put_chased(self, room: str, seq: int, chased: Chased) -> None:
        await put(self._runs, f"chased.{room}.{seq}", codec.encode(chased))

    async def chased(self, room: str, seq: int) -> Chased | None:
        """The chase whose question `seq` of `room` is, if it is one, and whom it asked."""
        raw = await self._value(f"chased.{room}.{seq}")
        return _chased.decode(raw) if raw else None

    async def change_cover(
        self, org: str, shift: str, change: Callable[[Cover | None], Cover | None]
    ) -> tuple[Cover | None, Cover | None]:
        """A cover after `change`; one closed is kept for a while (a yes that comes after
        it is gone finds no cover, and takes nothing)."""
        return await swap(
            self._runs,
            f"cover.{org}.{shift}",
            change,
            decode=_cover.decode,
            default=None,
            kept=lambda cover: self._kept if cover.closed else None,
            read=self._in_runs,
        )

    async def put_offer(self, room: str, seq: int, offer: Offer) -> None:
        await put(self._runs, f"offered.{room}.{seq}", codec.encode(offer))

    async def put_why(self, org: str, person: str, chonk_id: str, receipt: Receipt) -> None:
        """What the Chonk's last text to `person` that ends "Reply WHY" rests on."""
        key = f"why.{org}.{key_token(person)}.{chonk_id}"
        await put(self._runs, key, codec.encode(receipt), keep=self._kept)

    async def why(self, org: str, person: str, chonk_id: str) -> Receipt | None:
        raw = await self._value(f"why.{org}.{key_token(person)}.{chonk_id}")
        return _receipt.decode(raw) if raw else None

    async def offer(self, room: str, seq: int) -> Offer | None:
        raw = await self._value(f"offered.{room}.{seq}")
        return _offer.decode(raw) if raw else None

    async def change_packet(
        self,
        org: str,
        decider: str,
        packet_id: str,
        change: Callable[[Packet | None], Packet | None],
        *,
        record: Record,
    ) -> Packet | None:
        """The packet `decider` decides, changed by `change` (None where there is none),
        its change recorded first."""
        _, after = await swap(
            self._runs,
            f"packet.{org}.{key_token(decider)}.{packet_id}",
            change,
            decode=lambda raw: _packet.decode(raw) if raw else None,
            default=None,
            record=record,
            read=self._in_runs,
        )
        return after

    async def packets(self, org: str, decider: str) -> list[Packet]:
        """The packets `decider` decides: the key names them, so no one else's are read."""
        entries = await self._in_runs(self._runs, f"packet.{org}.{key_token(decider)}.*")
        found = (_packet.decode(e.value) for e in entries)
        return sorted(found, key=lambda p: (p.opened_at, p.id))

    async def add_outside(
        self, org: str, chonk_id: str, at: list[datetime], now: datetime
    ) -> list[datetime]:
        """Every time `chonk_id` proposed outside its allowlist in the past week, `at` too."""
        week = now - timedelta(days=7)
        _, after = await swap(
            self._runs,
            f"outside.{org}.{chonk_id}",
            lambda seen: [t for t in [*seen, *at] if t > week],
            decode=_times,
            default=[],
            read=self._in_runs,
        )
        return after

    async def modes(self, org: str, chonk_id: str) -> dict[str, str]:
        raw = await self._value(f"modes.{org}.{chonk_id}")
        return _modes(raw) if raw else {}

    async def put_modes(self, org: str, chonk_id: str, modes: dict[str, str]) -> None:
        await put(self._runs, f"modes.{org}.{chonk_id}", msgspec.json.encode(modes))

    async def voice(self, org: str) -> SetVoice | None:
        """The org's voice as an admin last set it; None if none has."""
        raw = await self._value(f"voice.{org}.tenant")
        return _voice.decode(raw) if raw else None

    async def set_voice(self, org: str, voice: SetVoice, *, record: Record) -> None:
        """`voice` in place of the org's, recorded first."""
        await swap(
            self._runs,
            f"voice.{org}.tenant",
            lambda _: voice,
            decode=_voice.decode,
            default=None,
            record=record,
            read=self._in_runs,
        )

    async def report(self, org: str, run_id: str) -> RunReport | None:
        raw = await self._value(f"{org}.{run_id}")
        return _report.decode(raw) if raw else None

    async def listed(self, org: str) -> list[Listed]:
        """The org's runs as its list names them, the one stored last first (a run asked
        again is stored again): a line each, never the report whole, which a run's
        receipt and message make some kilobytes, and a cadence for each person of the org
        stores every week."""
        entries = await self._in_runs(self._runs, f"listed.{org}.*")
        entries.sort(key=lambda e: e.revision, reverse=True)
        return [_listed.decode(e.value) for e in entries]

    async def told(
        self, org: str, person: str, chonk_id: str
    ) -> list[tuple[str, list[dict[str, Any]]]]:
        """The runs of `chonk_id` that told `person` something, the one stored last first:
        each run's id and where each of its messages to them is, so that only the report
        of the one asked about is read."""
        entries = await self._in_runs(self._runs, f"told.{org}.{key_token(person)}.{chonk_id}.*")
        entries.sort(key=lambda e: e.revision, reverse=True)
        return [(e.key.rsplit(".", 1)[1], _sent(e.value)) for e in entries]

    async def put_disputed(self, org: str, report: RunReport, said: str) -> None:
        """A review item of `report`'s, once for `said`: a digest of who said it in what
        words, never either."""
        ran = report.receipt["createdAt"].encode()
        await put(self._runs, f"disputed.{org}.{report.id}.{said}", ran)

    async def disputed(self, org: str, run_id: str = "*") -> Counter[tuple[str, str]]:
        """How often each of the org's runs (or `run_id`), by its id and when it ran, was
        said not to be so."""
        entries = await self._in_runs(self._runs, f"disputed.{org}.{run_id}.*")
        return Counter((e.key.split(".")[2], (e.value or b"").decode()) for e in entries)

    async def facts(self, org: str, person: str) -> list[MemoryFact]:
        entries = await self._in_memory(self._memory, f"facts.{org}.{key_token(person)}.*")
        return [_fact.decode(e.value) for e in entries]

    async def change_fact(
        self,
        org: str,
        person: str,
        fact_id: str,
        change: Callable[[MemoryFact | None], MemoryFact | None],
        *,
        now: datetime,
        record: Record | None = None,
    ) -> MemoryFact | None:
        """The fact as `change` leaves it, stored alone (no earlier value of it stays in
        the bucket's history) and removed by the server at its expiry."""
        key = f"facts.{org}.{key_token(person)}.{fact_id}"

        def write(fact: MemoryFact | None, revision: int) -> Awaitable[int]:
            keep = None if fact is None or fact.expires_at is None else fact.expires_at - now
            return write_at(self._memory, key, codec.encode(fact), revision, keep=keep, alone=True)

        _, after = await swap(
            self._memory,
            key,
            change,
            decode=_fact.decode,
            default=None,
            write=write,
            record=record,
            read=self._in_memory,
        )
        return after

    async def reads(self, org: str, person: str) -> list[MemoryRead]:
        found = await self._in_memory(self._memory, f"reads.{org}.{key_token(person)}")
        return _reads.decode(found[0].value) if found else []

    async def read_by(self, org: str, person: str, read: MemoryRead) -> None:
        await swap(
            self._memory,
            f"reads.{org}.{key_token(person)}",
            lambda reads: [*reads, read][-_READS_SHOWN:],
            decode=_reads.decode,
            default=[],
            read=self._in_memory,
        )


async def open_store(
    js: JetStreamContext, *, replicas: int = 1, kept: timedelta = SETTLED_KEPT
) -> ChonkStore:
    runs = await open_bucket(js, KeyValueConfig(bucket="chonk-runs", history=1, replicas=replicas))
    memory = await open_bucket(
        js, KeyValueConfig(bucket="chonk-memory", history=4, replicas=replicas)
    )
    in_runs, in_memory = await exact_reads(runs), await exact_reads(memory)
    return ChonkStore(runs, memory, in_runs, in_memory, kept=kept)


def _lapsed(claimed: bytes | None, now: datetime, lease: timedelta) -> bool:
    """Whether a run's claim is older than `lease` (one written before claims kept their
    time is)."""
    try:
        return datetime.fromisoformat((claimed or b"").decode()) + lease < now
    except ValueError:
        return True
