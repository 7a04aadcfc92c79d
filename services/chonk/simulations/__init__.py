"""Simulation tenants as data: each run's script for the deterministic model (what each
sub-agent answers), and what the run must end with."""

import re
from collections.abc import Callable
from importlib.resources import files
from typing import Any

import msgspec

from libs.model import Prompt
from services.chonk.harness import Run

__all__ = ["exists", "run_of", "script", "tenant"]

_ASKED = re.compile(r"^sub-agent: (\w+); step: ([\w-]+)", re.MULTILINE)


def exists(name: str) -> bool:
    """Whether a simulation tenant of this name is shipped, read without decoding it."""
    return files(__package__).joinpath(f"{name}.json").is_file()


def tenant(name: str) -> dict[str, Any]:
    return msgspec.json.decode(files(__package__).joinpath(f"{name}.json").read_bytes())


def script(answers: dict[str, Any]) -> Callable[[Prompt], str]:
    """The model's answer to each sub-agent's prompt, found by the sub-agent and step the
    prompt's TASK names; a writer's regeneration takes its second draft."""

    def answer(prompt: Prompt) -> str:
        asked = _ASKED.search(prompt.system)
        if asked is None:
            raise LookupError("a prompt that names no sub-agent and step")
        found = answers[f"{asked[1]}:{asked[2]}"]
        if isinstance(found, list):
            found = found[min(len(found) - 1, int("was rejected" in prompt.system))]
        return msgspec.json.encode(found).decode()

    return answer


def run_of(spec: dict[str, Any], tone: float) -> Run:
    """A simulation's run, as the harness takes it, at the tone its context and surface
    resolve to."""
    return Run(
        id=spec["id"],
        tenant=spec["tenant"],
        objective=spec["objective"],
        surface=spec["surface"],
        tone=tone,
        recipient=spec["recipient"],
        channel=spec.get("channel", "ic_thread"),
        managed=frozenset(spec["managed"]),
        names=frozenset(spec["names"]),
        formats=tuple(spec.get("formats", ("text",))),
        decisions=tuple(spec.get("decisions", ())),
    )
