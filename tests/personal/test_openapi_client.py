"""A client generated from `/v1/openapi.json` by a generator no one here wrote
(openapi-python-client), as a client developer makes one, used against the running
services: the document is one a generator reads with no warning, whose operations it
names and groups by their tags, and whose answers its typed models read back, a time as a
time and a refusal as a problem."""

import asyncio
import importlib
import json
import os
import sys
from datetime import datetime
from pathlib import Path

import pytest

from tests.personal.conftest import announce


@pytest.fixture
async def generated(api, tmp_path, monkeypatch):
    """The client package generated from the document the gateway serves, importable."""
    document = tmp_path / "openapi.json"
    document.write_text(json.dumps(await (await api.get("/v1/openapi.json")).json()))
    bin_ = Path(sys.executable).parent  # with ruff, which it formats what it wrote with
    made = await asyncio.create_subprocess_exec(
        str(bin_ / "openapi-python-client"), "generate",
        "--path", str(document), "--meta", "none", "--output-path", str(tmp_path / "tether_client"),
        env=os.environ | {"PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}"},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    said = (await asyncio.wait_for(made.communicate(), timeout=120))[0].decode()
    assert made.returncode == 0, said
    assert "Warning" not in said, said  # the generator read every operation and schema
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module
    for name in [m for m in sys.modules if m == "tether_client" or m.startswith("tether_client.")]:
        del sys.modules[name]


@pytest.fixture
def api(whole_api):
    return whole_api


async def test_a_generated_client_makes_a_room_says_something_and_reads_it_back(
    api, generated, operator, people
):
    await announce(operator, people.ada_id)
    client_module = generated("tether_client")

    def rooms(operation_id: str):  # a package a tag, a module an operation
        return generated(f"tether_client.api.rooms.{operation_id}")

    models = generated("tether_client.models")
    base = str(api.make_url("/")).rstrip("/")
    token = people.ada["Authorization"].removeprefix("Bearer ")
    async with client_module.AuthenticatedClient(base_url=base, token=token) as client:
        made = await rooms("post_v1_rooms").asyncio_detailed(
            client=client, body=models.CreateRoom(title="launch", members=[people.bob_id])
        )
        assert made.status_code == 201, made.content
        room = made.parsed
        assert isinstance(room, models.Room) and isinstance(room.created_at, datetime)
        assert made.headers["Location"] == f"/v1/rooms/{room.id}"

        said = await rooms("post_v1_rooms_id_messages").asyncio(
            room.id, client=client, body=models.SendBody(text="The deck is ready.")
        )
        assert isinstance(said, models.Message) and said.author_kind == "human"
        page = await rooms("get_v1_rooms_id_messages").asyncio(room.id, client=client)
        assert [(m.seq, m.text) for m in page.messages] == [(said.seq, "The deck is ready.")]

        # A refusal is read as the document's Problem, its rule and what was wrong named.
        missing = await rooms("get_v1_rooms_id").asyncio_detailed(
            "r-0000000000000000", client=client
        )
        assert missing.status_code == 404
        assert isinstance(missing.parsed, models.Problem)
        assert missing.parsed.type_ == "urn:tether:problem:room-not-found"
