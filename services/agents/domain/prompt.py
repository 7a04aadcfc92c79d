"""What the model is given to draft a reply: the persona, the person's preferences as read
now, and the recent history of the one room it answers in — nothing else."""

from collections.abc import Sequence

from libs.contracts.agents import Persona, Preferences
from libs.contracts.rooms import Message
from libs.model import Prompt, Turn

__all__ = ["acknowledged", "compose"]


def compose(
    persona: Persona, preferences: Preferences | None, history: Sequence[Message], *, speaker: str
) -> Prompt:
    """`speaker` is whom the agent writes as: the person (their own messages and their
    agent's are the assistant's turns) or, for the ambient agent, the org."""
    system = [persona.instructions]
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


def acknowledged(prompt: Prompt) -> str:
    """The built-in model's reply: it acknowledges the last message it was shown and signs
    as the person's preferences say, the same for the same prompt."""
    last = next((t for t in reversed(prompt.turns) if t.role == "user"), None)
    topic = (last.content.strip().splitlines() or [""])[0][:80] if last else ""
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
