"""What the model is given to draft a reply: the persona, the person's preferences as read
now, and the recent history of the one room it answers in — nothing else; and what its
answer holds: one reply, or up to three candidates for the person to pick from."""

from collections.abc import Sequence

import msgspec

from libs.contracts.agents import Persona, Preferences
from libs.contracts.rooms import LINE_MOST, Message, fitted, fitted_to_line
from libs.model import Prompt, Turn

__all__ = ["CANDIDATES", "acknowledged", "candidates", "compose"]

MAX_CANDIDATES = 3
CANDIDATES = (
    "Answer with the reply alone. If two or three replies would each serve and the person "
    'should choose, answer instead with JSON: {"candidates": ["...", "..."]}, best first.'
)


class _Candidates(msgspec.Struct):
    candidates: list[str]


def compose(
    persona: Persona,
    preferences: Preferences | None,
    history: Sequence[Message],
    *,
    speaker: str,
    line: str | None = None,
) -> Prompt:
    """`speaker` is whom the agent writes as: the person (their own messages and their
    agent's are the assistant's turns) or, for the ambient agent, the org. `line` is the
    transport the reply leaves by, told with what its carrier takes."""
    system = [persona.instructions, CANDIDATES]
    if line in LINE_MOST:
        how = "is said on a call" if line == "voice" else f"leaves by {line}"
        system.append(f"Each reply {how}: at most {LINE_MOST[line]:,} characters.")
    if preferences is not None:
        if preferences.display_name:
            system.append(f"You write as {preferences.display_name}.")
        if preferences.instructions:
            system.append(preferences.instructions)
        if preferences.tone:
            system.append(f"Tone: {preferences.tone}.")
        if preferences.signature:
            system.append(f"Sign off: {preferences.signature}")
    turns = tuple(
        Turn(
            role="assistant" if speaker in (m.author, m.on_behalf_of) else "user",
            name=m.author,
            content=m.text,
        )
        for m in history
    )
    return Prompt(system="\n".join(system), turns=turns)


def candidates(answer: str, line: str | None = None) -> tuple[str, ...]:
    """The model's candidates, best first, at most three, each once; an answer that is not
    the candidates' JSON is the one reply. A candidate longer than a message holds, or than
    the `line` it leaves by carries, is cut to it, ending in an ellipsis: the person sees
    it and decides, where one the rooms refused would be lost."""
    try:
        found = msgspec.json.decode(answer.strip(), type=_Candidates).candidates
    except (msgspec.DecodeError, msgspec.ValidationError):
        return (fitted_to_line(answer, line),)
    kept = tuple(dict.fromkeys(fitted_to_line(c.strip(), line) for c in found if c.strip()))
    return kept[:MAX_CANDIDATES] or (fitted_to_line(answer, line),)


def acknowledged(prompt: Prompt) -> str:
    """The built-in model's reply: it acknowledges the last message it was shown (its first
    line, cut to 80 characters with an ellipsis) and signs as the person's preferences say,
    the same for the same prompt."""
    last = next((t for t in reversed(prompt.turns) if t.role == "user"), None)
    topic = fitted((last.content.strip().splitlines() or [""])[0], 80) if last else ""
    sign = next(
        (
            line.removeprefix("Sign off: ")
            for line in prompt.system.splitlines()
            if line.startswith("Sign off: ")
        ),
        "",
    )
    text = f'Thanks for your message ("{topic}"). I\'ll get back to you shortly.'
    return f"{text}\n{sign}" if sign else text
