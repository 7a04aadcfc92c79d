"""Two replicas on two nodes of a cluster claiming one keyed request at once: the one whose
claim lost reads the claim to wait on it, and a node behind its leader may answer that
read. nats-py's create then raised KeyNotFoundError, and the request was a 500."""

import asyncio

from libs.runtime.replies import Answer, Replies

ROUNDS = 300


async def test_a_claim_lost_while_its_node_is_behind_waits_its_turn(two_nodes):
    writer, other = two_nodes
    replicas = [await Replies.open(nc.jetstream(), "echo", replicas=3) for nc in (writer, other)]
    ran: list[str] = []

    async def answer(key: str) -> Answer:
        ran.append(key)
        return Answer(b'"made"')

    async def asked(replies: Replies, key: str) -> Answer:
        return await replies.once(key, b"request", lambda: answer(key))

    for n in range(ROUNDS):
        key = f"claim-{n}"
        both = await asyncio.gather(*(asked(r, key) for r in replicas), return_exceptions=True)
        assert [a.body for a in both if isinstance(a, Answer)] == [b'"made"', b'"made"'], both
    assert sorted(ran) == sorted(f"claim-{n}" for n in range(ROUNDS))
