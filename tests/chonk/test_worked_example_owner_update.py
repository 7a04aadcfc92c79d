"""manager-agents.md §9, Chonksworth's weekly owner update to Priya on sim-lanternfish, run
end to end: the same fifteen numbered sources, rules and confidence line, the message to the
owner, and, by symmetry, an owner_report fact on the knows page of each person it names."""

from tests.chonk.conftest import ORG, person


async def test_the_owner_update_runs_end_to_end_and_ana_and_lena_can_read_what_priya_was_told(
    api,
):
    priya = person("priya", roles=("admin",))
    r = await api.post("/v1/chonk/runs", json={"tenant": ORG, "run": "owner_update"}, headers=priya)
    assert r.status == 201, await r.text()
    report = await r.json()
    sources = report["receipt"]["sources"]
    assert len(sources) == 15
    assert sources[0]["label"].startswith(
        "GitHub lanternfish/core#412 — merged 2026-09-03 16:10 PT"
    )
    assert sources[14]["label"].startswith("HUMAN_ONLY packet pkt_01J6LENA")
    message = report["message"]
    assert message.startswith("Morning, Priya. Walk with me.")
    assert (
        "Rules: PS-CRIT-PATH pass · STALL-REVIEW-20H fired · CAP-GAP-0.5 threshold_exceeded · "
        "SANDBAG-TRAIL-20 fired · pol_tooling_3k n/a"
    ) in message
    assert message.endswith(
        "Confidence 0.86 · gaps: HubSpot mirror last synced 2026-09-06 22:00Z (9h stale)"
    )
    # §9's ProposedActions: the message, its video, and the three decisions Chonksworth
    # surfaces without having made them, each AUTONOMOUS.
    assert [(a["kind"], a["to"], a["class"]) for a in report["actions"]] == [
        ("SEND_MESSAGE:owner", "Priya", "AUTONOMOUS"),
        ("RENDER_CONTENT", "Priya", "AUTONOMOUS"),
        ("ESCALATE", "Priya", "AUTONOMOUS"),
        ("ESCALATE", "Priya", "AUTONOMOUS"),
        ("ESCALATE", "Priya", "AUTONOMOUS"),
    ]
    assert report["actions"][1]["text"] == "video"
    assert [a["text"].split(":")[0] for a in report["actions"][2:]] == [
        "dec_req_support", "dec_q4goals", "pkt_01J6LENA"
    ]  # fmt: skip
    # Symmetry: each person named reads what Priya was told of them, verbatim, and nothing
    # said of anyone else: Lena's packet is in no one else's memory (§9).
    said = {}
    for name in ("ana", "lena", "ben"):
        knows = await (await api.get("/v1/chonk/knows", headers=person(name))).json()
        [fact] = [f for f in knows["facts"] if f["id"] in report["memory"]]
        assert (fact["kind"], fact["visibility"]) == ("owner_report", "self_owner")
        assert fact["content"] in message
        said[name] = fact["content"]
    assert said["ana"].startswith("Ana's growth goal (lead the auth migration end to end)")
    assert said["lena"].startswith("3. Compensation packet for Lena.") and "S3" in said["lena"]
    assert "chased Ben, then Tomás" in said["ben"]
    assert [n for n, c in said.items() if "S3" in c or "Compensation" in c] == ["lena"]
    assert [n for n, c in said.items() if "Morning, Priya" in c] == []
    nobody = await (await api.get("/v1/chonk/knows", headers=person("sam"))).json()
    assert nobody["facts"] == []
