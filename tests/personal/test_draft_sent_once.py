"""A draft's send stores its message once and hands it to the carrier once, however late
it is pressed again after a send that stopped half way.

A send claims the draft (`sending`), stores the message under the draft's id, hands it to
the line and then marks the draft sent. A replica that dies before the last step leaves
the draft `sending`, waiting on its person; the stream recognises the draft's id for an
hour only, so a Send pressed the next day stored the message a second time and texted the
correspondent twice. Here the first send is made whole, the draft is put back as that
replica left it, and the stream is made to forget the id, as an hour does."""

import msgspec
import pytest

from libs.contracts import codec
from libs.contracts.base import key_token
from libs.contracts.rooms import ROOMS, Draft
from services.rooms.domain.drafts import draft_id
from tests.personal.conftest import an_hour_on, history
from tests.personal.test_delivery import _sent_by_line


@pytest.fixture
def api(whole_api):
    return whole_api


async def test_a_send_pressed_again_after_one_that_stopped_half_way_stores_and_sends_once(
    api, operator, people
):
    _, room, sent = await _sent_by_line(api, operator, people)
    js = operator.jetstream()
    drafts_kv = await js.key_value("rooms")
    draft_key = (
        f"draft.{key_token(people.ada_id)}.{room['id']}.{draft_id(room['id'], sent['reply_to'])}"
    )
    entry = await drafts_kv.get(draft_key)
    draft = codec.decoder(Draft).decode(entry.value)
    assert (draft.state, draft.sent_seq) == ("sent", sent["seq"])
    # As a replica that died after handing the message over, before marking its draft sent.
    stopped = msgspec.structs.replace(draft, state="sending", sent_seq=None)
    await drafts_kv.update(draft_key, codec.encode(stopped), last=entry.revision)

    outbound = f"rooms.outbound.sms.{people.org}"  # the line's code, and the reply
    handed = (await js.stream_info(ROOMS.name, subjects_filter=outbound)).state.subjects

    async with an_hour_on(js):
        path = f"/v1/rooms/{room['id']}/drafts/{draft.id}/send"
        again = await api.post(path, json={}, headers=people.ada)
        assert again.status == 201, await again.text()
        answered = await again.json()

    assert (answered["seq"], answered["delivery"]) == (sent["seq"], sent["delivery"])
    drafted = [m for m in await history(api, room, people.ada) if m.get("drafted_by")]
    assert [m["seq"] for m in drafted] == [sent["seq"]]
    assert handed == {outbound: 2}
    assert (await js.stream_info(ROOMS.name, subjects_filter=outbound)).state.subjects == handed
    after = codec.decoder(Draft).decode((await drafts_kv.get(draft_key)).value)
    assert (after.state, after.sent_seq) == ("sent", sent["seq"])
