"""The system prompt of §5.1: eight sections in order, the first four the same for every run
of one tenant and Chonk (so a prompt cache hits), stored by hash with the run."""

import hashlib
import json
from typing import Any

import msgspec

from services.chonk.domain.run import RunConfig
from services.chonk.domain.tone import directness
from services.chonk.domain.types import RoleCharter

__all__ = ["COMMITMENTS", "SECTIONS", "Prompt", "TenantDirection", "build"]

SECTIONS = ("IDENTITY", "CHARTER", "VOICE", "TENANT_DIRECTION", "OPERATING_STATE",
            "CONTEXT_BUNDLE", "TASK", "OUTPUT_CONTRACT")  # fmt: skip
COMMITMENTS = (
    "I am not human, and I say so.",
    "No covert surveillance.",
    "Symmetry: what I tell the owner about you, you can read.",
    "Candor with a path.",
    "Escalation is your right and cannot be suppressed.",
)


class TenantDirection(msgspec.Struct, frozen=True):
    goals: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    hard_lines: tuple[str, ...] = ()
    priorities: tuple[str, ...] = ()
    managers_of_record: dict[str, str] = {}


class Prompt(msgspec.Struct, frozen=True):
    sections: tuple[tuple[str, str], ...]

    @property
    def text(self) -> str:
        return "\n\n".join(f"## {name}\n{body}" for name, body in self.sections)

    @property
    def stable(self) -> str:
        """The hash of the first four sections, the same across runs of a tenant's Chonk."""
        return _hash("\n\n".join(body for _, body in self.sections[:4]))

    @property
    def hash(self) -> str:
        return _hash(self.text)


def build(
    charter: RoleCharter,
    *,
    tone: float,
    direction: TenantDirection,
    config: RunConfig,
    state: dict[str, Any],
    bundle: dict[str, Any],
    task: str,
    contract: str,
) -> Prompt:
    voice = charter.voice
    identity = "\n".join([
        f"You are {voice.display_name}, {charter.title}, a {voice.species}.", *COMMITMENTS
    ])  # fmt: skip
    charter_text = "\n".join([
        "Owns:", *(f"- {o}" for o in charter.owns),
        "Escalates:", *(f"- {e.when} -> {e.to} ({e.as_})" for e in charter.escalates),
        "Never touches:", *(f"- {n}" for n in charter.never_touches),
    ])  # fmt: skip
    phrases = (
        f" Signature phrases, used sparingly and more as the tone rises: "
        f"{'; '.join(voice.signature_phrases)}."
        if voice.signature_phrases
        else ""
    )
    voice_text = (
        f"{voice.register} Humor {voice.humor_style}; warmth {voice.warmth}; "
        f"directness {directness(voice)}.{phrases} This run's tone is in OPERATING_STATE (so "
        "this section stays the same from run to run). The dial changes character, humor, "
        "sentence length and framing; never facts, citations, the recommendation, the path "
        "of a concern, the non-human disclosure or directness."
    )
    operating = {**state, "actions you may propose in this run": sorted(config.actions)}
    sections = (
        ("IDENTITY", identity),
        ("CHARTER", charter_text),
        ("VOICE", voice_text),
        ("TENANT_DIRECTION", _json(msgspec.to_builtins(direction))),
        ("OPERATING_STATE", _json({**operating, "tone": tone})),
        ("CONTEXT_BUNDLE", _json(bundle)),
        ("TASK", task),
        ("OUTPUT_CONTRACT", contract),
    )
    return Prompt(sections=sections)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
