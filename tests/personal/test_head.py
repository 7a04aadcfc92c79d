"""RFC 9110 §9.3.2: a server answers HEAD wherever it answers GET, with the GET's headers
and no body. Before, every GET of the API answered HEAD 405: a monitor or a link checker
asking whether a resource is there was told the method is wrong."""

from tests.personal.conftest import room_with


async def test_head_is_the_get_without_its_body(api, people):
    room = await room_with(api, people, people.bob_id)
    for path in ("/v1/rooms", f"/v1/rooms/{room['id']}", "/v1/ladder", "/v1/windows"):
        got = await api.get(path, headers=people.ada)
        head = await api.head(path, headers=people.ada)
        assert (head.status, await head.read()) == (200, b""), path
        assert head.headers["Content-Type"] == got.headers["Content-Type"]
        assert int(head.headers["Content-Length"]) == len(await got.read())
    # Another's room is as absent to HEAD as to GET, and a POST-only route still says so.
    theirs = await api.head(f"/v1/rooms/{room['id']}", headers=people.eve)
    assert theirs.status == 404
    assert (await api.head("/v1/poa/verify", headers=people.ada)).status == 405
