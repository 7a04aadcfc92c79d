from tests.mod.conftest import HIDE_BOARD, refusal, version, write


async def test_a_person_writes_reads_and_composes_their_layer(api, people):
    surface = await (await api.get("/v1/mod/surface", headers=people.ada)).json()
    assert len(surface["order"]) == 15
    r = await write(api, people.ada, "user", [HIDE_BOARD])
    assert r.status == 200, await r.text()
    v = (await r.json())["version"]
    assert await version(api, people.ada, "user") == v
    composed = await (await api.get("/v1/mod/composed", headers=people.ada)).json()
    assert "hanzo/board/board" in composed["hidden"]
    r = await write(api, people.agent, "user", [HIDE_BOARD])
    assert r.status == 202, await r.text()
    r = await write(api, people.bare_agent, "user", [HIDE_BOARD])
    assert await refusal(r) == (403, "mod-write-needed")
