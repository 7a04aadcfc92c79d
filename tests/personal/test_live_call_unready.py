"""A live call whose agent cannot answer while the carrier waits. Before, a model that
failed made the call webhook a 503, and one slower than the gateway's wait a 504: Twilio
plays the caller its error and hangs up, with no voicemail; and a slow reply that came
after the 504 was recorded in the room as said. Now the call rings on or takes a
voicemail, and nothing is recorded as said."""

import asyncio

import pytest

from libs.model import Prompt
from tests.personal.conftest import Recorder, announce, history, set_level
from tests.personal.test_hip0524_10_live_call import CALLER, _known_caller, ring, voice_line


class Unready(Recorder):
    """The built-in model, but on a call it fails as a provider's 503 does, or is slower
    than the gateway waits for the call's answer."""

    def __init__(self, slow_s: float) -> None:
        super().__init__()
        self.failing, self._slow_s = True, slow_s

    async def reply(self, prompt: Prompt) -> str:
        if "said on a call" in prompt.system:
            if self.failing:
                raise RuntimeError("the model's provider answered 503")
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
