"""The model interface the agent drafts through: a deterministic built-in for development
and tests, and an OpenAI-compatible chat-completions client for real use."""

import os
from collections.abc import Mapping
from typing import Protocol

import aiohttp
import msgspec

from services.agents.domain.prompt import Prompt

__all__ = ["ChatCompletions", "Model", "ModelUnavailable", "Scripted", "model_from_env"]


class ModelUnavailable(Exception):
    """The model did not answer with a reply."""


class Model(Protocol):
    async def reply(self, prompt: Prompt) -> str: ...

    async def close(self) -> None: ...


class Scripted:
    """The same prompt always gives the same reply: it acknowledges the last message it
    was shown and signs as the person's preferences say."""

    async def reply(self, prompt: Prompt) -> str:
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

    async def close(self) -> None:
        pass


class _Choice(msgspec.Struct):
    message: dict[str, object]


class _Completion(msgspec.Struct):
    choices: list[_Choice]


class ChatCompletions:
    """`POST {base_url}/chat/completions`, as OpenAI and its compatible servers serve it."""

    def __init__(self, base_url: str, model: str, key: str = "", timeout: float = 60) -> None:
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._model = model
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._session = aiohttp.ClientSession(
            headers=headers, timeout=aiohttp.ClientTimeout(total=timeout)
        )

    async def reply(self, prompt: Prompt) -> str:
        messages = [{"role": "system", "content": prompt.system}]
        for turn in prompt.turns:
            content = turn.content if turn.role == "assistant" else f"{turn.name}: {turn.content}"
            messages.append({"role": turn.role, "content": content})
        body = {"model": self._model, "messages": messages, "temperature": 0.2}
        try:
            async with self._session.post(self._url, json=body) as response:
                raw = await response.read()
                if response.status != 200:
                    raise ModelUnavailable(f"{self._url} answered {response.status}: {raw[:200]!r}")
        except aiohttp.ClientError as exc:
            raise ModelUnavailable(f"{self._url}: {exc}") from exc
        try:
            content = msgspec.json.decode(raw, type=_Completion).choices[0].message["content"]
        except (msgspec.DecodeError, IndexError, KeyError) as exc:
            raise ModelUnavailable(f"{self._url} answered no reply: {exc}") from exc
        if not isinstance(content, str) or not content.strip():
            raise ModelUnavailable(f"{self._url} answered an empty reply")
        return content.strip()

    async def close(self) -> None:
        await self._session.close()


def model_from_env(env: Mapping[str, str] | None = None) -> Model:
    """
    | variable           | default   | meaning                                          |
    |--------------------|-----------|--------------------------------------------------|
    | TETHER_MODEL_URL   | (empty)   | an OpenAI-compatible base URL, e.g.              |
    |                    |           | https://api.openai.com/v1; empty: the built-in   |
    | TETHER_MODEL_NAME  | gpt-4o-mini | the model asked for                            |
    | TETHER_MODEL_KEY   | (empty)   | its API key                                      |
    """
    env = os.environ if env is None else env
    url = env.get("TETHER_MODEL_URL", "")
    if not url:
        return Scripted()
    return ChatCompletions(
        url, env.get("TETHER_MODEL_NAME", "gpt-4o-mini"), env.get("TETHER_MODEL_KEY", "")
    )
