"""hip-0528 §7 rule 3: with no reviewer configured there is no verdict, and no verdict is
never a pass: the install says it is unreviewed, and nothing is recorded as a verdict."""

import pytest

from libs.audit.reading import records
from tests.mod.conftest import install, weather


@pytest.fixture
def reviewer() -> str:
    return ""


async def test_hip0528_07_with_no_reviewer_there_is_no_verdict_and_it_is_unreviewed(
    api, people, operator
):
    r = await install(api, people.root, weather())
    assert r.status == 201, await r.text()
    installed = await r.json()
    assert installed["review"] is None and installed["reviewed"] == "unreviewed"
    found = await records(operator.jetstream(), people.org)
    assert [r.action for r in found] == ["mod.install"]
