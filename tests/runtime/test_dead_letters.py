"""A dead letter goes back to its readers once its cause is fixed: `tether dead` lists what
each reader parked after every retry failed, and `--send-again` publishes each to its
subject as new and removes it from DEAD. Before, a parked message had no way back: the
messages a reader could not handle through a model provider's outage longer than its
retries (about two minutes) were never answered."""

import asyncio
import subprocess
import sys
import uuid
from datetime import UTC, datetime

from libs.audit.reading import records
from libs.contracts.principal import REQUEST_ID_HEADER
from libs.runtime import logs
from libs.runtime.consumer import Consumer, Retry
from libs.runtime.dead import parked
from libs.runtime.service import ensure_shared_streams
from tests.personal.conftest import eventually


async def _dead(stack, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The command as an operator runs it; run aside, so this loop's services answer it."""
    return await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "cli.main", "dead", *args],
        env={**stack.env(), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


async def test_a_parked_message_is_sent_again_once_its_cause_is_fixed(
    operator, stack, audit_service
):
    js, name = operator.jetstream(), uuid.uuid4().hex[:8]
    stream, subject, reader = f"DL_{name}", f"dl.{name}.said", f"probe{name}.d"
    await ensure_shared_streams(js, ("DEAD",))
    await js.add_stream(name=stream, subjects=[subject])
    handled: list[tuple[bytes, str | None]] = []
    down = True

    async def handle(data: bytes) -> None:
        if down:
            raise RuntimeError("the model's provider answered 503")
        handled.append((data, logs.REQUEST.get()))

    consumer = Consumer(
        js,
        stream=stream,
        durable="d",
        service=f"probe{name}",
        subjects=[subject],
        read=lambda m: m.data,
        handle=handle,
        retry=Retry(first_s=0.05, attempts=2),
    )
    reading = asyncio.create_task(consumer.run(wait=0.1))
    try:
        # Published for a request: the letter names it, and is handled again under it.
        asked = b"are you free on Thursday?"
        await js.publish(subject, asked, headers={REQUEST_ID_HEADER: "req-thursday"})
        (letter,) = await eventually(lambda: parked(operator, reader))
        assert (letter.subject, letter.data, letter.request) == (subject, asked, "req-thursday")
        assert "the model's provider answered 503" in letter.error

        listed = await _dead(stack, "--reader", reader)
        assert listed.returncode == 0, listed.stderr
        assert f"{letter.seq} " in listed.stdout and "1 dead letter(s) parked" in listed.stdout
        assert f"{subject} (request req-thursday): " in listed.stdout
        by_service = await _dead(stack, "--reader", f"probe{name}")
        assert f"{letter.seq} " in by_service.stdout, by_service.stderr
        bogus = letter.seq + 1000
        unfound = await _dead(stack, "--reader", reader, "--seq", str(bogus), "--send-again")
        assert (unfound.returncode, unfound.stderr) == (1, f"none parked by {reader} at {bogus}\n")
        unnamed = await _dead(stack, "--send-again")
        assert unnamed.returncode == 2 and "--reader" in unnamed.stderr
        # Parked longer ago than the services keep what they settled (a second here), it
        # is held back: what its readers did with it then may be forgotten, and done again.
        await asyncio.sleep(max(0.0, 1.1 - (datetime.now(UTC) - letter.at).total_seconds()))
        old = await _dead(stack, "--reader", reader, "--send-again", TETHER_SETTLED_KEPT="1")
        assert old.returncode == 1, old.stderr
        assert f"{letter.seq} held back" in old.stdout and "--older" in old.stderr
        unread = await _dead(stack, "--reader", reader, "--send-again", TETHER_SETTLED_KEPT="a")
        assert unread.returncode == 2 and "TETHER_SETTLED_KEPT='a'" in unread.stderr
        assert "Traceback" not in unread.stderr
        assert [p.seq for p in await parked(operator, reader)] == [letter.seq]

        down = False
        sent = await _dead(stack, "--reader", reader, "--send-again")
        assert sent.returncode == 0, sent.stderr
        assert "1 dead letter(s) sent again" in sent.stdout

        async def answered() -> bool:
            return handled == [(asked, "req-thursday")]

        assert await eventually(answered)
        assert await parked(operator, reader) == []
        (record,) = [
            r for r in await records(js, "tether") if r.target == f"DEAD:{letter.seq}"
        ]  # the operator's act, recorded as the parking was
        assert (record.action, record.actor.sub, record.service) == (
            "reader.dead_letter.send_again",
            "operator",
            "operator",
        )
    finally:
        consumer.stop()
        await reading
        await js.delete_stream(stream)


async def test_a_reader_no_service_has_is_named_with_those_there_are(stack):
    """A reader's name mistyped read as "0 dead letter(s) parked", which an operator
    looking for what their service parked takes for nothing parked."""
    mistyped = await _dead(stack, "--reader", "agnets.meter")
    assert mistyped.returncode == 2 and mistyped.stdout == "", mistyped.stdout
    assert "no reader is named 'agnets.meter'" in mistyped.stderr
    assert "agents.meter" in mistyped.stderr and "ladder.ladder" in mistyped.stderr
    named = await _dead(stack, "--reader", "agents.meter")
    assert named.returncode == 0 and "dead letter(s) parked" in named.stdout, named.stderr
