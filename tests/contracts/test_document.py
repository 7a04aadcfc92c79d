"""`tether contracts`: the registry as a document another language can code against."""

import json
import re
import subprocess
import sys

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from libs.contracts import EXTERNAL_EVENTS, SERVICES
from libs.contracts.base import TEXT_CHARACTER
from libs.contracts.document import document
from libs.contracts.poa import Decision, IssueGrant
from libs.contracts.principal import Principal
from libs.contracts.rooms import Text, fitted


def test_the_document_names_every_subject_with_json_schemas():
    out = subprocess.run(
        [sys.executable, "-m", "cli.main", "contracts"], capture_output=True, text=True,
        check=True,
    ).stdout  # fmt: skip
    document = json.loads(out)
    served = {s.published_by("<caller>") for svc in SERVICES for s in (svc.health, *svc.subjects)}
    assert {s["subject"] for s in document["subjects"]} == served
    verify = next(s for s in document["subjects"] if s["subject"] == "tether.poa.verify")
    assert verify["queue_group"] == "poa"
    assert verify["request"] == "#/components/schemas/VerifyRequest"
    schemas = document["components"]["schemas"]
    assert {"Principal", "Problem", "VerifyRequest", "Decision"} <= schemas.keys()
    assert schemas["Principal"]["required"] == ["org", "sub"]


def test_a_reader_that_stops_early_gets_no_traceback():
    """`tether contracts | head` printed a BrokenPipeError's traceback under what head
    showed."""
    with subprocess.Popen(
        [sys.executable, "-m", "cli.main", "contracts"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    ) as proc:  # fmt: skip
        assert proc.stdout.read(10) == b'{\n  "title'
        proc.stdout.close()
        assert proc.wait(timeout=30) == 1
        assert proc.stderr.read() == b""


def test_contract_types_refuse_unknown_fields_naming_them():
    with pytest.raises(msgspec.ValidationError, match="unknown field `owner`"):
        msgspec.json.decode(b'{"grant": {}, "owner": "eve"}', type=IssueGrant)


def test_a_principal_needs_an_org_that_is_one_subject_token():
    with pytest.raises(msgspec.ValidationError, match=r"\$.org"):
        msgspec.json.decode(b'{"org": "a.b", "sub": "a/b"}', type=Principal)


def test_a_decision_leaves_out_what_it_does_not_carry():
    encoded = msgspec.json.encode(Decision(decision="DENY", rule_id="revoked"))
    assert encoded == b'{"decision":"DENY","rule_id":"revoked"}'


def _patterns(node: object) -> set[str]:
    if isinstance(node, dict):
        found = {node["pattern"]} if isinstance(node.get("pattern"), str) else set()
        return found.union(*(_patterns(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_patterns(v) for v in node))
    return set()


PATTERNS = sorted(_patterns(document(SERVICES, EXTERNAL_EVENTS)))


def test_every_pattern_of_the_contracts_is_anchored_at_both_ends():
    assert len(PATTERNS) > 20
    assert [p for p in PATTERNS if not (p.startswith("^") and p.endswith("$(?!\\n)"))] == []


@given(st.data())
def test_no_pattern_takes_a_value_and_a_final_newline(data):
    """Python's `$` matches before a final newline: "acme/bob\\n" was a room's member, with
    an agent "agent:acme/bob\\n" beside it, and a title could end in a control character."""
    pattern = data.draw(st.sampled_from([p for p in PATTERNS if not re.search(p, "\n")]))
    value = data.draw(st.from_regex(pattern))
    assert re.search(pattern, value)
    assert re.search(pattern, value + "\n") is None


def test_a_message_s_text_is_any_line_but_no_control_character():
    """A newline is text in a message (the one kind of pattern that takes it), a NUL or an
    escape is not: no carrier takes one, and TwiML's <Say>, an XML document, may not hold
    one."""
    assert {p for p in PATTERNS if re.search(p, "\n")} == {f"^{TEXT_CHARACTER}+$(?!\\n)"}
    for text in ("two\nlines\n", "a\ttab", "emoji 👍", "é"):
        assert msgspec.convert(text, Text) == text
    for text in ("nul\x00", "bell\x07", "escape\x1b[31m", "del\x7f"):
        with pytest.raises(msgspec.ValidationError):
            msgspec.convert(text, Text)
    assert fitted("ok\x00\x1b[0m\n") == "ok[0m\n"  # what an agent drafts, made text
