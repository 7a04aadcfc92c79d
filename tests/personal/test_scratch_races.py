import asyncio

import pytest

from tests.personal.conftest import announce, fresh_number
from tests.personal.test_hip0524_09_personal_line import code_sent


@pytest.fixture
def api(whole_api):
    return whole_api


@pytest.mark.parametrize("n", range(4))
async def test_line_race(api, operator, people, n):
    address = fresh_number()
    codes = {}
    for who in ("ada", "bob"):
        body = {"transport": "sms", "address": address, "credential": f"{who}-token-xxxxxxxx"}
        r = await api.post("/v1/lines", json=body, headers=getattr(people, who))
        assert r.status == 201, await r.text()
        codes[who] = await code_sent(operator, "sms", people.org, address)
    rs = await asyncio.gather(*(api.post("/v1/lines/sms/verify", json={"code": codes[w]}, headers=getattr(people, w)) for w in ("ada", "bob")))
    out = [(r.status, (await r.text())[:120]) for r in rs]
    print(out)
    mine = [(w, [(l["address"], l["state"]) for l in (await (await api.get("/v1/lines", headers=getattr(people, w))).json())["lines"]]) for w in ("ada", "bob")]
    print(mine)
    assert sorted(s for s, _ in out) == [200, 409]
