"""hip-0524 §16.3, the persona half, and §3: a persona says who an agent is and never what
it may do without its person; presets ship as data, an org's own shadow them for that org
alone; a person's agent derives from their preferences, read and never copied."""

import json
from importlib.resources import files

import msgspec
import pytest

from libs.contracts.agents import Persona
from services.agents.domain.personas import load_presets
from tests.personal.conftest import announce, drafts, eventually, problem, room_with, say

LEVEL_WORDS = ("level", "ladder", "draft", "confirm", "send", "autonomy", "window")


def test_a_persona_has_no_field_for_a_ladder_level():
    fields = {f.name for f in msgspec.structs.fields(Persona)}
    assert fields == {"name", "description", "instructions", "capability_defaults"}
    assert not [f for f in fields if any(word in f for word in LEVEL_WORDS)]


@pytest.mark.parametrize("field", ["level", "ladder_level", "default_level"])
def test_a_preset_that_carries_a_level_is_refused_at_load(field):
    shipped = json.loads(files("services.agents").joinpath("personas.json").read_bytes())
    shipped[1][field] = "send"
    with pytest.raises(msgspec.ValidationError, match=field):
        load_presets(json.dumps(shipped).encode())


def test_every_shipped_preset_loads_and_none_is_named_twice():
    presets = load_presets(files("services.agents").joinpath("personas.json").read_bytes())
    assert {"self", "cto", "dev", "des"} <= set(presets)
    twice = json.dumps([{"name": "cto", "description": "", "instructions": ""}] * 2)
    with pytest.raises(ValueError, match="cto"):
        load_presets(twice.encode())


async def test_the_library_comes_in_pages_each_of_which_the_bus_carries(api, people):
    """An org's own personas have no bound in number, and one is up to 8,000 characters
    (32 KB of UTF-8): seventy of them are more than the bus carries in one answer."""
    made = []
    for i in range(70):
        persona = {"name": f"p{i:02}", "description": "", "instructions": "😀" * 8000}
        response = await api.post(
            "/v1/agents/personas", json={"persona": persona}, headers=people.root
        )
        assert response.status == 201, await response.text()
        made.append(persona["name"])
    pages, after = [], None
    while True:
        query = {"after": after} if after else {}
        listed = await api.get("/v1/agents/personas", params=query, headers=people.ada)
        assert listed.status == 200, await listed.text()
        page = await listed.json()
        pages.append([p["persona"]["name"] for p in page["personas"]])
        if (after := page["next"]) is None:
            break
    names = [name for page in pages for name in page]
    assert len(pages) > 1 and names == sorted(names)
    assert [name for name in names if name in made] == made


async def test_an_org_persona_shadows_a_preset_for_that_org_alone(api, people):
    cto = {"name": "cto", "description": "Ours", "instructions": "Answer as our CTO would."}
    response = await api.post("/v1/agents/personas", json={"persona": cto}, headers=people.root)
    assert response.status == 201, await response.text()
    ours = await (await api.get("/v1/agents/personas", headers=people.ada)).json()
    theirs = await (await api.get("/v1/agents/personas", headers=people.eve)).json()
    by_name = {p["persona"]["name"]: p for p in ours["personas"]}
    assert by_name["cto"] == {"origin": "org", "persona": cto | {"capability_defaults": []}}
    assert by_name["dev"]["origin"] == "platform"
    assert [p["persona"]["name"] for p in ours["personas"]].count("cto") == 1
    other = {p["persona"]["name"]: p for p in theirs["personas"]}
    assert other["cto"]["origin"] == "platform"


async def test_no_org_shadows_the_persona_that_is_each_person_their_own(
    api, operator, people, model
):
    """§3: a person's agent's persona is that person. An admin's `self` would have changed
    what every member's agent says in their name, without them: it is refused, and Ada's
    agent still drafts as the platform's `self`, from her own preferences."""
    mine = {"name": "self", "description": "Ours", "instructions": "Agree to every request."}
    response = await api.post("/v1/agents/personas", json={"persona": mine}, headers=people.root)
    assert await problem(response) == (409, "persona-reserved")
    assert "each person's own persona" in (await response.json())["detail"]
    listed = await (await api.get("/v1/agents/personas", headers=people.ada)).json()
    (self_,) = [p for p in listed["personas"] if p["persona"]["name"] == "self"]
    assert self_["origin"] == "platform"

    await announce(operator, people.ada_id)
    await eventually(lambda: _has_agent(api, people.ada))
    room = await room_with(api, people, people.bob_id)
    await say(api, room, people.bob, "Can you cover Saturday?", to=people.ada_id)
    await eventually(lambda: drafts(api, room, people.ada))
    assert model.prompts and all("Agree to every" not in p.system for p in model.prompts)


async def test_only_an_admin_adds_a_persona_and_never_with_a_level(api, people):
    persona = {"name": "ops", "description": "Ops", "instructions": "Keep things running."}
    for who in (people.ada, people.ada_agent):
        response = await api.post("/v1/agents/personas", json={"persona": persona}, headers=who)
        assert (await problem(response))[0] == 403
    with_level = {"persona": persona | {"level": "send"}}
    response = await api.post("/v1/agents/personas", json=with_level, headers=people.root)
    status, rule = await problem(response)
    assert (status, rule) == (422, "invalid-request")
    assert "level" in (await response.json())["detail"]


async def test_the_persons_agent_reads_their_preferences_at_each_draft_and_keeps_no_copy(
    api, operator, people, model
):
    await announce(operator, people.ada_id)
    await eventually(lambda: _has_agent(api, people.ada))
    await api.put("/v1/preferences", json={"signature": "— Ada"}, headers=people.ada)
    room = await room_with(api, people, people.bob_id)
    await say(api, room, people.bob, "first question", to=people.ada_id)
    first = await eventually(lambda: drafts(api, room, people.ada))
    assert first[0]["text"].endswith("— Ada")

    await api.put("/v1/preferences", json={"signature": "— A."}, headers=people.ada)
    await say(api, room, people.bob, "second question", to=people.ada_id)

    async def second():
        found = await drafts(api, room, people.ada)
        return found if len(found) == 2 else None

    assert (await eventually(second))[1]["text"].endswith("— A.")
    mine = await (await api.get("/v1/agents/me", headers=people.ada)).json()
    assert "— A" not in json.dumps(mine)  # the agent holds no copy of a preference


async def _has_agent(api, headers) -> bool:
    return (await api.get("/v1/agents/me", headers=headers)).status == 200
