"""A live call whose agent cannot answer while the carrier waits. Before, a model that
failed made the call webhook a 503, and one slower than the gateway's wait a 504: Twilio
plays the caller its error and hangs up, with no voicemail; and a slow reply that came
after the 504 was recorded in the room as said. Now the call rings on or takes a
voicemail, and nothing is recorded as said."""

import asyncio

import msgspec
import pytest

from libs.contracts.agents import SPEAK
from libs.contracts.problem import PROBLEM_HEADER
from libs.model import ModelUnavailable, Prompt
from tests.personal.conftest import Recorder, announce, history, room_with, say, set_level
from tests.personal.test_hip0524_10_live_call import CALLER, _known_caller, ring, voice_line


class Unready(Recorder):
    """The built-in model, but on a call it fails as the chat-completions client does when
    its provider answers 503, or is slower than the gateway waits for the call's answer."""

    def __init__(self, slow_s: float) -> None:
        super().__init__()
        self.failing, self._slow_s = True, slow_s

    async def reply(self, prompt: Prompt) -> str:
        if "said on a call" in prompt.system:
            if self.failing:
                raise ModelUnavailable("https://models.example/v1 answered 503: b'overloaded'")
            await asyncio.sleep(self._slow_s)
        return await super().reply(prompt)


@pytest.fixture
def model(gateway_settings) -> Unready:
    return Unready(slow_s=gateway_settings.request_timeout + 1)


async def test_an_agent_that_cannot_answer_in_time_leaves_the_call_to_voicemail(
    api, operator, people, model
):
    await announce(operator, people.ada_id)
    line = await voice_line(api, operator, people)
    room = {"id": await _known_caller(api, line, people.ada)}
    await set_level(api, people.ada, "send")
    for failing in (True, False):
        model.failing = failing
        answered = await ring(api, line)
        assert answered.status == 200, await answered.text()
        twiml = await answered.text()
        assert "<Record " in twiml and "<Say>" in twiml, twiml  # the voicemail's greeting
    texts = [m["text"] for m in await history(api, room, people.ada)]
    assert texts[2:] == [f"Call from {CALLER}"] * 2  # the calls, nothing said


async def test_a_model_that_is_down_is_a_transient_503_never_a_500(api, operator, people):
    """Asked as the rooms service asks on a call: the provider's outage passes, so the
    answer says to ask again and why. It was a 500 `internal`, logged as a failure of the
    agents service itself."""
    await announce(operator, people.ada_id)
    room = await room_with(api, people, people.bob_id)
    said = await say(api, room, people.bob, "Are you free to talk?")
    speak = {"org": people.org, "person": people.ada_id, "room": room["id"], "upto": said["seq"]}
    answer = await operator.request(
        SPEAK.published_by("rooms"), msgspec.json.encode(speak), timeout=10
    )
    problem = msgspec.json.decode(answer.data)
    assert (answer.headers or {}).get(PROBLEM_HEADER) == "503", problem
    assert problem["type"].endswith(":model-unavailable"), problem
    assert "answered 503" in problem["detail"], problem
