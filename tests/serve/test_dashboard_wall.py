"""The dashboard on a wall and on a phone: the newest run by time then by
insertion, the index by latest activity with a status strip each, the next
experiments with their commands, warnings that name their runs, pages that
follow the knowledge base without a reload (their ETag, ``/live.js``), and
Chromium screenshots at 1920×1080 and 390 pixels across."""

from __future__ import annotations

import json

import httpx
import pytest
from markupsafe import escape

from tests.support.png import colour_count, pixels
from tests.support.serving import Server
from tests.support.browser import browse
from triage.render.commands import wrap
from triage.serve import dashboard

REPO, PR = "sgl-project/sglang", 30433
OPEN, GREEN = (0x79, 0xB8, 0xFF), (0x1A, 0x7F, 0x37)  # the strip's open and confirmed cells
AMBER = (0xDB, 0xAB, 0x09)  # the investigation's mark


@pytest.fixture
def url(seeded) -> str:
    """The seeded knowledge base, by its whole path (engines are kept per URL)."""
    return f"sqlite:///{seeded.parent / 'kb.sqlite'}"


def test_the_newest_run_is_the_latest_by_time_then_the_last_recorded():
    at = "2026-07-01T03:00:00"
    runs = [{"run_id": "a", "time": at + "Z"}, {"run_id": "b", "time": at}, {"run_id": "c", "time": None},
            {"run_id": "d", "time": "2026-06-30T22:30:00-05:00"}]  # 03:30 UTC: the latest
    assert dashboard.newest(runs)["run_id"] == "d"
    assert dashboard.newest(runs[:3])["run_id"] == "b"  # the same time as a, recorded after it
    assert dashboard.newest([{"run_id": "x", "time": None}, {"run_id": "y", "time": None}])["run_id"] == "y"
    assert dashboard.newest([]) is None


def test_the_last_run_of_two_at_one_time_is_the_one_recorded_last(url, cli):
    for run_id in ("7001", "7000"):  # the same time; 7000 recorded last (and sorts first by id)
        r = cli("add-run", "--pr", str(PR), "--run-id", run_id, "--config", "kimik26-fp8-1k1k-1p1d",
                "--metric", "gsm8k=0.9/1319", "--status", "passed", "--time", "2026-12-01T00:00:00Z")
        assert r.code == 0, r.err
    row = next(r for r in dashboard.overview(url) if r["inv"]["id"] == "kimik26-disagg")
    assert row["last_run"]["run_id"] == "7000"


def test_the_index_lists_by_latest_activity_with_a_status_strip_each(url, cli):
    before = [r["inv"]["id"] for r in dashboard.overview(url)]
    assert cli("add-run", "--pr", "128", "--repo", "example/llm-serve", "--run-id", "9001", "--config", "e2e",
               "--metric", "wall_s=1500", "--status", "passed", "--time", "2026-11-01T00:00:00Z").code == 0
    got = [(r["inv"]["id"], r["activity"]) for r in dashboard.overview(url)]
    assert got[0][0] == "e2e-walltime", got
    assert cli("add-run", "--pr", str(PR), "--run-id", "9002", "--config", "kimik26-fp8-1k1k-1p1d",
               "--metric", "gsm8k=0.9/1319", "--status", "passed", "--time", "2026-11-02T00:00:00Z").code == 0
    rows = dashboard.overview(url)
    assert [r["inv"]["id"] for r in rows][:2] == ["kimik26-disagg", "e2e-walltime"]
    assert sorted(r["inv"]["id"] for r in rows) == sorted(before)
    kimi = rows[0]
    statuses = [c["status"] for c in kimi["strip"]]
    assert len(statuses) == sum(kimi["counts"].values())
    assert statuses == sorted(statuses, key=dashboard.STRIP_ORDER.index) and statuses[0] == "confirmed"
    page = dashboard.render("index.html.j2", rows=rows)
    assert page.count('<ol class="hstrip"') == len(rows)
    assert page.index(f'href="/pr/{REPO}/{PR}"') < page.index('href="/pr/example/llm-serve/128"')


def test_the_page_shows_the_next_experiments_with_their_commands_and_warnings_with_their_runs(url, cli):
    report = json.loads(cli("report", "--pr", str(PR), "--format", "json").out)
    model, history, colour, why = dashboard.investigation_page(url, REPO, PR)
    page = dashboard.render("page.html.j2", model=model, history=history, colour=colour, why=why)
    listed = page[page.index('<ol id="suggestions">'):page.index("</ol>", page.index('<ol id="suggestions">'))]
    assert [s["command"] for s in model["suggestions"]] == [s["command"] for s in report["suggestions"]]
    assert model["suggestions"] and listed.count("<li>") == len(model["suggestions"])
    for s in model["suggestions"]:  # each with its command, one option a line as in the comment
        assert f"<code>{s['short']}</code>" in listed and escape(wrap(s["command"])) in listed
    assert escape(wrap(report["command"])) in page[page.index('id="command"'):]

    warnings = page[page.index('<ul id="warnings">'):page.index("</ul>", page.index('<ul id="warnings">'))]
    items = warnings.split("<li>")[1:]
    assert len(items) == len(model["warnings"]) >= 2
    for item, w in zip(items, model["warnings"]):
        for r in w["by_run"]:  # the run, linked to CI when it has a link, and its configs
            named = f'<a href="{r["url"]}">{r["run_id"]}</a>' if r["url"] else f"<strong>{r['run_id']}</strong>"
            assert f'{named} ({", ".join(r["configs"])})' in item


def test_pages_answer_304_while_unchanged_and_load_only_their_own_script(seeded, fake_github, cli, tmp_path):
    srv = Server(tmp_path, fake_github, "--insecure-no-signature").start()
    try:
        for path in ("/", f"/pr/{REPO}/{PR}"):
            first = srv.get(path)
            tag = first.headers["etag"]
            assert first.status_code == 200 and '<script src="/live.js" defer></script>' in first.text
            csp = first.headers["content-security-policy"]
            assert "default-src 'none'" in csp and "script-src 'self'" in csp and "connect-src 'self'" in csp
            same = srv.get(path, headers={"If-None-Match": tag})
            assert same.status_code == 304 and same.content == b""
        r = cli("add-run", "--pr", str(PR), "--run-id", "9003", "--config", "kimik26-fp8-1k1k-1p1d",
                "--metric", "gsm8k=0.9/1319", "--status", "passed")
        assert r.code == 0, r.err
        changed = srv.get(f"/pr/{REPO}/{PR}", headers={"If-None-Match": tag})
        assert changed.status_code == 200 and "9003" in changed.text and changed.headers["etag"] != tag
        script = srv.get("/live.js")
        assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
        assert "If-None-Match" in script.text and 'querySelector("main")' in script.text
        assert "http" not in script.text.replace("https://", "").split("(function")[1]  # no other origin
    finally:
        srv.stop()


@pytest.mark.slow
def test_chromium_screenshots_at_1920x1080_and_on_a_390_pixel_phone(seeded, fake_github, cli, tmp_path):
    r = cli("add-run", "--pr", str(PR), "--run-id", "9004", "--config", "kimik26-fp8-1k1k-1p1d",
            "--metric", "gsm8k=0.9/1319", "--status", "passed", "--time", "2026-11-02T00:00:00Z")
    assert r.code == 0, r.err  # the latest activity: the first on the index
    srv = Server(tmp_path, fake_github, "--insecure-no-signature").start()
    try:
        page_url = f"{srv.url}/pr/{REPO}/{PR}"
        dom = browse(page_url, tmp_path, "--dump-dom", "--window-size=1920,1080")
        assert dom.returncode == 0, dom.stderr[-2000:]
        assert 'data-live="15"' in dom.stdout and "live · every 15 s" in dom.stdout  # the script ran, within the CSP
        later = browse(page_url, tmp_path, "--dump-dom", "--virtual-time-budget=20000")  # 20 s on the page's clock
        assert later.returncode == 0 and "live · checked " in later.stdout, later.stdout[-2000:]  # it asked again
        assert "Suggested next" in later.stdout  # and the page is whole

        shots = {}
        for name, size in (("wall", "1920,1080"), ("phone", "390,844")):
            for what, url in (("index", f"{srv.url}/"), ("page", page_url)):
                shot = tmp_path / f"{what}-{name}.png"
                taken = browse(url, tmp_path, f"--screenshot={shot}", f"--window-size={size}")
                assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
                shots[what, name] = shot
        for name, width in (("wall", 1920), ("phone", 390)):
            w, h, _ = pixels(shots["index", name])
            assert (w, h) == (width, 1080 if name == "wall" else 844)
            # within the first screen: the marks and every investigation's status strip
            assert colour_count(shots["index", name], OPEN) > 100 and colour_count(shots["index", name], GREEN) > 20
        assert colour_count(shots["page", "wall"], AMBER) > 100 and colour_count(shots["page", "phone"], AMBER) > 100
        assert httpx.get(f"{srv.url}/healthz").status_code == 200
    finally:
        srv.stop()
