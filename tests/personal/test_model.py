"""The OpenAI-compatible chat-completions client, against a real HTTP server speaking that
shape; and the built-in model's determinism."""

import asyncio

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from libs.model import ChatCompletions, ModelUnavailable, Prompt, Scripted, Turn, model_from_env
from services.agents.domain.prompt import acknowledged

PROMPT = Prompt(
    system="You are Ada.\nSign off: — Ada",
    turns=(Turn("user", "acme/bob", "Lunch on Friday?"), Turn("assistant", "acme/ada", "Sure")),
)


@pytest.fixture
async def completions():
    seen: list[dict] = []
    answer = {
        "status": 200,
        "body": {"choices": [{"message": {"content": " Friday works. "}}]},
        "after_s": 0,
    }

    async def handler(request: web.Request) -> web.Response:
        seen.append({"auth": request.headers.get("Authorization"), "body": await request.json()})
        await asyncio.sleep(answer["after_s"])
        return web.json_response(answer["body"], status=answer["status"])

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    server = TestServer(app)
    await server.start_server()
    yield server, seen, answer
    await server.close()


async def test_the_client_sends_the_prompt_and_reads_the_reply(completions):
    server, seen, _ = completions
    model = ChatCompletions(str(server.make_url("/v1")), "gpt-test", key="sk-test")
    try:
        assert await model.reply(PROMPT) == "Friday works."
    finally:
        await model.close()
    [call] = seen
    assert call["auth"] == "Bearer sk-test"
    assert call["body"]["model"] == "gpt-test"
    assert call["body"]["messages"] == [
        {"role": "system", "content": "You are Ada.\nSign off: — Ada"},
        {"role": "user", "content": "acme/bob: Lunch on Friday?"},
        {"role": "assistant", "content": "Sure"},
    ]


@pytest.mark.parametrize(
    "status, body",
    [(500, {"error": "down"}), (200, {"choices": []}), (200, {"choices": [{"message": {}}]})],
)
async def test_a_failed_or_empty_answer_is_model_unavailable(completions, status, body):
    server, _, answer = completions
    answer.update(status=status, body=body)
    model = ChatCompletions(str(server.make_url("/v1")), "gpt-test")
    try:
        with pytest.raises(ModelUnavailable):
            await model.reply(PROMPT)
    finally:
        await model.close()


async def test_a_model_that_does_not_answer_in_time_is_model_unavailable(completions):
    server, _, answer = completions
    answer.update(after_s=5)
    model = ChatCompletions(str(server.make_url("/v1")), "gpt-test", timeout=0.2)
    try:
        with pytest.raises(ModelUnavailable, match=r"did not answer in 0\.2 s"):
            await model.reply(PROMPT)
    finally:
        await model.close()


async def test_the_built_in_model_is_deterministic_and_signs_as_told():
    model = Scripted(acknowledged)
    first, second = await model.reply(PROMPT), await model.reply(PROMPT)
    assert first == second
    assert "Lunch on Friday?" in first and first.endswith("— Ada")


async def test_the_built_in_model_says_where_it_cut_what_it_quotes():
    said = "Can you send me the deck before Friday's review? I want to read the numbers first."
    reply = acknowledged(Prompt(system="", turns=(Turn("user", "acme/bob", said),)))
    assert reply.startswith(f'Thanks for your message ("{said[:79]}…").'), reply


async def test_the_environment_chooses_the_model():
    built_in = Scripted(acknowledged)
    assert model_from_env(built_in, {}) is built_in
    configured = model_from_env(built_in, {"TETHER_MODEL_URL": "http://127.0.0.1:1/v1"})
    assert isinstance(configured, ChatCompletions)
    await configured.close()
