"""A draft's window end asks the ladder for the person's level. With the ladder away past
every try, the end is parked and done again until it is back: the draft then commits
itself. Dropped, it stayed open past the time it said it would commit, until it expired a
day later."""

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from libs.contracts import ladder, mod
from services.ladder.main import serve as serve_ladder
from services.mod.main import serve as serve_mod
from tests.chonk.conftest import stopped
from tests.mod.conftest import HIDE_BOARD, level, write
from tests.personal.conftest import eventually
from tests.support import FAST_RETRY, parked_holding, serving


@pytest.fixture
def mod_clock() -> Callable[[], datetime]:
    """57 s behind: a one-minute window ends three real seconds after its draft."""
    return lambda: datetime.now(UTC) - timedelta(seconds=57)


@pytest.fixture
async def mod_service(settings_for, audit_service, mod_clock):
    serve = lambda svc: serve_mod(svc, mod_clock, retry=FAST_RETRY)  # noqa: E731
    async with serving(mod.CONTRACT, settings_for("mod"), serve) as svc:
        yield svc


async def test_a_window_end_the_ladder_could_not_answer_commits_once_it_is_back(
    api, people, operator, ladder_service, settings_for
):
    await level(api, people.ada, "send", window="1m")
    r = await write(api, people.agent, "user", [HIDE_BOARD])
    assert r.status == 202, await r.text()
    draft = (await r.json())["draft"]
    await stopped(operator, ladder_service, ladder.LEVEL.published_by("mod"))
    await eventually(lambda: parked_holding(operator, "mod.mod", draft["id"]), timeout=30)
    async with serving(ladder.CONTRACT, settings_for("ladder"), lambda svc: serve_ladder(svc)):

        async def kept() -> dict | None:
            found = await api.get(f"/v1/mod/drafts/{draft['id']}", headers=people.ada)
            found = await found.json()
            return found if found["state"] != "open" else None

        found = await eventually(kept, timeout=30)
    assert found["state"] == "kept"
    layer = await (await api.get("/v1/mod/layers/user", headers=people.ada)).json()
    assert layer["change"]["draft"] == draft["id"]
