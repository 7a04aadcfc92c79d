"""EC-MGR-009's escalation is timed before anyone is texted: a call-out whose texts could
not be sent (the rooms away, and the message not sent again) still comes due for Kwame.
Before, it was timed after the texts, so it never came. (What it says when it comes due is
`test_ec_mgr_009`'s; this leaves the shared shift's cover as a first call-out would.)"""

import msgspec
import pytest

from libs.contracts import scheduler
from tests.chonk.conftest import HARBOR, worker
from tests.chonk.test_ec_mgr_009 import BAR


@pytest.fixture
async def rooms_service():
    """The rooms away: no replica serves their subjects."""
    yield None


async def test_a_call_out_whose_texts_failed_is_still_timed_to_escalate(api, operator):
    r = await api.post(
        "/v1/chonk/messages",
        json={"chonk": "ops", "text": "Ike hasn't come in, I'm alone on the bar"},
        headers=worker("lin"),
    )
    assert r.status == 503, await r.text()  # the texts are asked of the rooms, away
    key = f"cover.{HARBOR}.{BAR}"
    get = msgspec.json.encode(scheduler.GetTimer(key=key))
    reply = await operator.request(scheduler.GET.published_by("chonk"), get, timeout=5)
    held = msgspec.json.decode(reply.data)
    assert (held.get("target"), held.get("state")) == ("cover", "pending"), held
    cancel = msgspec.json.encode(scheduler.Cancel(key=key))  # so it never comes due here
    await operator.request(scheduler.CANCEL.published_by("chonk"), cancel, timeout=5)
