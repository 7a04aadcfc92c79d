"""Issue 16: tether's subjects called by clients no one here wrote: the official NATS
JavaScript client (@nats-io/transport-node and @nats-io/jetstream) and the official C client
(Debian's libnats-dev). `make test` installs node's packages and the C client, as it does
Chromium.

The bodies are built from the JSON Schemas `tether contracts` prints, as an outside
service would build them, and every answer is checked against the same document: a reply
against its reply schema, a refusal against the Problem schema with the status it
documents. A client without the right credentials is refused by the bus itself; the JS
client reads a room's history from its stream.
"""

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import msgspec
import pytest

from libs.contracts.principal import Principal
from tests.interop.bodies import minimal

HERE = Path(__file__).parent
MISSING_ROOM = "r-0000000000000000"


@pytest.fixture(scope="module")
def contracts() -> dict:
    """The document a client's author reads: `tether contracts`."""
    out = subprocess.run(
        [sys.executable, "-m", "cli.main", "contracts"], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def check(contracts: dict, value: object, ref: str) -> None:
    schema = {"$ref": ref, "components": contracts["components"]}
    jsonschema.Draft202012Validator(schema).validate(value)


def reply_of(contracts: dict, subject: str) -> str:
    return next(s["reply"] for s in contracts["subjects"] if s["subject"] == subject)


def request_of(contracts: dict, subject: str) -> dict:
    ref = next(s["request"] for s in contracts["subjects"] if s["subject"] == subject)
    return contracts["components"]["schemas"][ref.rsplit("/", 1)[-1]]


@pytest.fixture
def principal(org) -> dict:
    return msgspec.to_builtins(Principal(org=org, sub=f"{org}/ada"))


def bodies(contracts: dict) -> dict:
    components = contracts["components"]
    create = minimal(request_of(contracts, "tether.rooms.create"), components, title="interop")
    send = minimal(request_of(contracts, "tether.rooms.send"), components,
                   id="r-0000000000000001", text="from outside")  # fmt: skip
    return {"create": create, "send": {k: v for k, v in send.items() if k != "id"}}


def problem(contracts: dict, header: str, body: dict, status: int, rule: str) -> None:
    check(contracts, body, "#/components/schemas/Problem")
    assert (int(header), body["status"], body["type"]) == (
        status, status, f"urn:tether:problem:{rule}"
    )  # fmt: skip
    assert body["detail"]


async def run(*argv: object, cwd: Path | None = None, given: str = "") -> tuple[int, str, str]:
    """A client program run beside the services, which go on answering meanwhile."""
    proc = await asyncio.create_subprocess_exec(
        *map(str, argv), cwd=cwd, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(given.encode()), 60)
    return proc.returncode or 0, out.decode(), err.decode()


@pytest.mark.usefixtures("rooms_service", "agents_service")
async def test_the_official_javascript_client(stack, contracts, principal):
    node = shutil.which("node")
    assert node, "node is not installed: make test installs it"
    assert (HERE / "js" / "node_modules" / "@nats-io").is_dir(), "make test runs npm ci"
    given = {
        "servers": stack.nats_url,
        "passwords": {r: stack.passwords[r] for r in ("gateway", "audit", "operator")},
        "principal": principal,
        "bodies": bodies(contracts),
        "missing_room": MISSING_ROOM,
    }
    code, stdout, stderr = await run(node, "interop.mjs", cwd=HERE / "js", given=json.dumps(given))
    assert code == 0, stderr
    out = json.loads(stdout)

    created, sent = out["created"], out["sent"]
    assert created["problem"] is None and sent["problem"] is None, out
    check(contracts, created["body"], reply_of(contracts, "tether.rooms.create"))
    check(contracts, sent["body"], reply_of(contracts, "tether.rooms.send"))
    assert (created["body"]["org"], sent["body"]["text"]) == (principal["org"], "from outside")
    unknown = out["unknown_field"]
    problem(contracts, unknown["problem"], unknown["body"], 422, "invalid-request")
    assert "colour" in unknown["body"]["detail"]
    missing = out["missing"]
    problem(contracts, missing["problem"], missing["body"], 404, "room-not-found")

    assert "Authorization Violation" in out["wrong_password"]
    assert "Permissions Violation" in out["not_a_caller"]
    assert [m["text"] for m in out["history"]] == ["from outside"]
    check(contracts, out["history"][0], "#/components/schemas/Message")


@pytest.mark.usefixtures("rooms_service", "agents_service")
async def test_the_official_c_client(stack, contracts, principal, tmp_path):
    binary = tmp_path / "interop"
    code, flags, _ = await run("pkg-config", "--cflags", "--libs", "libnats")
    assert code == 0, "libnats-dev is not installed: make test installs it"
    code, _, errors = await run(
        "cc", "-Wall", "-o", binary, HERE / "c" / "interop.c", *flags.split()
    )
    assert code == 0, errors
    create = bodies(contracts)["create"]
    code, stdout, stderr = await run(
        binary, stack.nats_url, stack.passwords["gateway"], stack.passwords["audit"],
        json.dumps(principal), json.dumps(create), json.dumps(create | {"colour": "blue"}),
    )  # fmt: skip
    assert code == 0, stdout + stderr
    out = {what: (header, body) for what, header, body in
           (line.split("\t", 2) for line in stdout.splitlines())}  # fmt: skip

    header, body = out["created"]
    assert header == "-", body
    check(contracts, json.loads(body), reply_of(contracts, "tether.rooms.create"))
    problem(contracts, *_parsed(out["unknown_field"]), 422, "invalid-request")
    problem(contracts, *_parsed(out["not_json"]), 400, "malformed-json")
    assert out["wrong_password"][1] == "Authentication Violation", out["wrong_password"]
    assert out["not_a_caller"][1].startswith("error"), out["not_a_caller"]
    assert "Permissions Violation" in out["not_a_caller_why"][1], out["not_a_caller_why"]


def _parsed(answer: tuple[str, str]) -> tuple[str, dict]:
    return answer[0], json.loads(answer[1])
