"""A layer write whose compare-and-set was stored, and its answer lost on the way back (the
mod replica's NATS node stalled, or its link): the version stood, and the write was
answered 503 and recorded `mod.layer.write.failed`, a change made named in the trail as
one that failed. Now the write is asked again, meets itself, and is answered as made. So is
an uninstall, whose removal is asked again under one message id.

The lost answer is made by a TCP proxy between the mod replica and its server (`Link`),
which keeps what the server sends back from the moment the replica writes the layer until
after nats-py's wait (5 s) has run out."""

import msgspec
import pytest

from libs.audit.reading import records
from libs.contracts import mod
from services.mod.main import serve as serve_mod
from tests.mod.conftest import HIDE_BOARD, install, weather, write
from tests.support import serving_across_a_link

LAYER_WRITE = b"HPUB $KV.mod-layers."  # the write, not a read naming the key
UNINSTALL = b"PUB $KV.mod-installs."


@pytest.fixture
async def linked(settings_for, audit_service, mod_clock, draft_ttl, client_for, gateway_settings):
    """A gateway that waits for the mod service, whose connection crosses a Link."""

    def serve(svc):
        return serve_mod(svc, mod_clock, draft_ttl=draft_ttl)

    async with serving_across_a_link(mod.CONTRACT, settings_for("mod"), serve) as link:
        waiting = msgspec.structs.replace(gateway_settings, request_timeout=30.0)
        yield await client_for(waiting, services=(mod.CONTRACT,)), link


async def test_a_layer_write_whose_answer_was_lost_is_answered_and_recorded_as_made(
    linked, people, operator
):
    api, link = linked
    link.deafen_at(LAYER_WRITE, 6.5)
    r = await write(api, people.ada, "user", [HIDE_BOARD], base=0)

    assert r.status == 200, await r.text()
    written = (await r.json())["version"]
    layer = await (await api.get("/v1/mod/layers/user", headers=people.ada)).json()
    assert (layer["version"], layer["ops"]) == (written, [HIDE_BOARD])
    found = await records(operator.jetstream(), people.org)
    assert [r.action for r in found] == ["mod.layer.write"]


async def test_an_uninstall_whose_answer_was_lost_is_answered_and_recorded_as_made(
    linked, people, operator
):
    api, link = linked
    assert (await install(api, people.root, weather())).status == 201
    link.deafen_at(UNINSTALL, 6.5)
    r = await api.delete("/v1/mod/installs/acme/weather", headers=people.root)

    assert r.status == 200, await r.text()
    listed = await (await api.get("/v1/mod/installs", headers=people.root)).json()
    assert listed["installs"] == []
    found = await records(operator.jetstream(), people.org)
    assert [r.action for r in found] == ["mod.install", "mod.uninstall"]
