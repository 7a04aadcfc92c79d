"""The one model interface every service drafts through (the agents' replies, the
manager agents' sub-agents): a deterministic scripted model for development, tests and the
simulation tenants, and an OpenAI-compatible chat-completions client for real use."""

import os
import re
from collections.abc import Callable, Mapping
from typing import Literal, Protocol

import aiohttp
import msgspec

from libs.runtime.settings import BadSetting

__all__ = [
    "ASKING",
    "REPLY_TIMEOUT_S",
    "ChatCompletions",
    "Model",
    "ModelUnavailable",
    "Prompt",
    "Scripted",
    "Turn",
    "model_from_env",
]


class Turn(msgspec.Struct, frozen=True):
    role: Literal["user", "assistant"]
    name: str
    content: str


class Prompt(msgspec.Struct, frozen=True):
    """A system text and the turns after it."""

    system: str
    turns: tuple[Turn, ...] = ()


class ModelUnavailable(Exception):
    """The model did not answer with a reply."""


class Model(Protocol):
    async def reply(self, prompt: Prompt) -> str: ...

    async def close(self) -> None: ...


class Scripted:
    """A deterministic model: the same prompt always gives the same reply, `script`'s."""

    def __init__(self, script: Callable[[Prompt], str]) -> None:
        self._script = script

    async def reply(self, prompt: Prompt) -> str:
        return self._script(prompt)

    async def close(self) -> None:
        pass


class _Choice(msgspec.Struct):
    message: dict[str, object]


class _Completion(msgspec.Struct):
    choices: list[_Choice]


# A model's reply may take most of a minute; one slower is taken as its provider away (a
# 503, asked again). A replica stopping waits this long for the reply it holds.
REPLY_TIMEOUT_S = 60
# The services that ask a model, and so may hold a reply that long as they stop.
ASKING = frozenset({"agents"})


class ChatCompletions:
    """`POST {base_url}/chat/completions`, as OpenAI and its compatible servers serve it."""

    def __init__(
        self, base_url: str, model: str, key: str = "", timeout: float = REPLY_TIMEOUT_S
    ) -> None:
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._model, self._timeout = model, timeout
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
        except TimeoutError as exc:  # aiohttp's total timeout is not a ClientError
            raise ModelUnavailable(f"{self._url} did not answer in {self._timeout} s") from exc
        try:
            content = msgspec.json.decode(raw, type=_Completion).choices[0].message["content"]
        except (msgspec.DecodeError, IndexError, KeyError) as exc:
            raise ModelUnavailable(f"{self._url} answered no reply: {exc}") from exc
        if not isinstance(content, str) or not content.strip():
            raise ModelUnavailable(f"{self._url} answered an empty reply")
        return content.strip()

    async def close(self) -> None:
        await self._session.close()


_BASE_URL = re.compile(r"https?://[^/?#\s]+(/[^?#\s]*)?\Z")


def model_from_env(scripted: Model, env: Mapping[str, str] | None = None) -> Model:
    """
    | variable           | default   | meaning                                          |
    |--------------------|-----------|--------------------------------------------------|
    | TETHER_MODEL_URL   | (empty)   | an OpenAI-compatible base URL, e.g.              |
    |                    |           | https://api.openai.com/v1; empty: `scripted`     |
    | TETHER_MODEL_NAME  | gpt-4o-mini | the model asked for                            |
    | TETHER_MODEL_KEY   | (empty)   | its API key                                      |
    """
    env = os.environ if env is None else env
    url = env.get("TETHER_MODEL_URL", "")
    if not url:
        return scripted
    if not _BASE_URL.match(url):
        # Found out only at the first message otherwise, as a reply every person's agent
        # could not draft.
        raise BadSetting(f"TETHER_MODEL_URL={url!r}: a base URL, http:// or https:// and a host")
    return ChatCompletions(
        url, env.get("TETHER_MODEL_NAME", "gpt-4o-mini"), env.get("TETHER_MODEL_KEY", "")
    )
