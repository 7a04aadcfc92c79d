"""What an agent says for its person with no one asked is on the audit trail before it is
said, once however often it is asked again: a reply sent at once (send, instant), as a
window's end already was, and what it speaks on a live call. Before, neither was recorded:
the most unattended act there is left no record of its own."""

import re
from datetime import datetime

from libs.audit.reading import records
from tests.personal.conftest import announce, history, route, set_level
from tests.personal.test_hip0524_10_live_call import _known_caller, ring, voice_line
from tests.personal.test_line_limits import _replied_at_once


async def test_a_reply_sent_at_once_is_recorded_first_and_once(api, operator, people):
    room, arrived, reply = await _replied_at_once(api, operator, people, "Is Saturday at ten?")
    # The agents service's reader, delivered the message again, routes the reply again.
    again = {"org": people.org, "person": people.ada_id, "room": room["id"], "transport": "sms",
             "reply_to": arrived["seq"], "candidates": [reply["text"]]}  # fmt: skip
    assert (await route(operator, again))["sent_seq"] == reply["seq"]

    trail = await records(operator.jetstream(), people.org)
    [sent] = [r for r in trail if r.action == "ladder.reply.send"]
    assert sent.data == {"room": room["id"], "reply_to": arrived["seq"]}
    assert (sent.actor.sub, sent.actor.act) == (people.ada_id, f"agent:{people.ada_id}")
    assert sent.at <= datetime.fromisoformat(reply["at"])  # recorded before it was said


async def test_what_the_agent_says_on_a_live_call_is_recorded_first_and_once(api, operator, people):
    await announce(operator, people.ada_id)
    line = await voice_line(api, operator, people)
    room_id = await _known_caller(api, line, people.ada)
    await set_level(api, people.ada, "send")
    answered = await ring(api, line, sid="CAspoken0001")
    assert re.search(r"<Say>(.+)</Say>", await answered.text())
    again = await ring(api, line, sid="CAspoken0001")  # the carrier asking again
    assert again.status == 200, await again.text()
    found = await history(api, {"id": room_id}, people.ada)
    spoken = [m for m in found if m["author_kind"] == "agent"]
    trail = await records(operator.jetstream(), people.org)
    [said] = [r for r in trail if r.action == "rooms.call.speak"]
    assert (said.target, said.actor.act) == (room_id, f"agent:{people.ada_id}")
    assert [(m["seq"], m["automatic"]) for m in spoken] == [(spoken[0]["seq"], True)]
