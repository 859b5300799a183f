"""`triage serve` end to end: the real server (uvicorn on loopback, a subprocess)
gets the real webhook payloads of the fixtures, signed; the fake GitHub
answers its follow-up calls."""

from __future__ import annotations

import json
import re
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.support.serving import fixture_bytes, signed, with_run
from tests.support.serve import PR, REPO, RUN, WITH_PR, add_run, runs, write_rules

NO_PR = "workflow_run.completed.json"
MARKER = "<!-- triage:investigation=octo-drop -->"


def test_signatures_size_and_json_are_checked_before_anything_is_stored(server, fake_github, tmp_path):
    srv = server()
    body = fixture_bytes(WITH_PR)
    wrong = srv.send(body, "workflow_run", secret="not-the-secret")
    assert wrong.status_code == 401
    headers = signed(body, "workflow_run")
    del headers["X-Hub-Signature-256"]
    missing = httpx.post(f"{srv.url}/webhook", content=body, headers=headers)
    assert missing.status_code == 401
    tampered = signed(body, "workflow_run")
    assert httpx.post(f"{srv.url}/webhook", content=body.replace(b"octo-repo", b"octo-repx"),
                      headers=tampered).status_code == 401
    assert srv.send(b"{not json", "workflow_run").status_code == 400
    assert srv.send(b"[1, 2]", "workflow_run").status_code == 400
    status, said = srv.declared(26 * 1024 * 1024, "workflow_run")  # refused before a byte of the body is read
    assert status == 413 and json.loads(said)["outcome"] == "too large"
    assert srv.send(b'{"zen": "Keep it logically awesome."}', "ping").json() == {"outcome": "pong"}
    other = srv.send(fixture_bytes("pull_request.opened.json"), "pull_request")
    assert other.status_code == 202 and other.json()["outcome"] == "ignored"
    time.sleep(0.5)
    assert srv.deliveries() == [] and runs(tmp_path) == [] and fake_github.requests == []
    outcomes = [(x["event"], x["outcome"], x["http"]) for x in srv.log_lines() if "http" in x]
    assert outcomes[:2] == [("workflow_run", "bad signature", 401)] * 2
    assert ("pull_request", "ignored", 202) in outcomes


def test_unsigned_needs_the_flag_and_loopback(fake_github, tmp_path, cli, monkeypatch):
    write_rules(tmp_path)
    r = cli("serve")
    assert r.code == 2 and r.err.startswith("Error: set TRIAGE_WEBHOOK_SECRET")
    r = cli("serve", "--insecure-no-signature", "--host", "0.0.0.0")
    assert r.code == 2 and "loopback only" in r.err


def test_comment_created_once_updated_on_the_next_run_untouched_on_redelivery(server, fake_github, tmp_path):
    add_run(fake_github, RUN)
    srv = server()
    body = fixture_bytes(WITH_PR)
    first = srv.send(body, "workflow_run", "delivery-1")
    assert first.status_code == 202 and first.json() == {"outcome": "queued", "delivery": "delivery-1"}
    assert srv.wait_settled(1)[0][1:3] == ("done", 1)
    assert runs(tmp_path) == [(str(RUN), "gpu-a", "failed"), (str(RUN), "gpu-b", "passed")]  # lint: no config
    (comment,) = fake_github.comments(REPO, PR)
    assert comment["body"].rstrip().endswith(MARKER) and str(RUN) in comment["body"]
    writes = len(fake_github.writes())
    assert writes == 1

    again = srv.send(body, "workflow_run", "delivery-1")  # GitHub's redelivery: the same id
    assert again.status_code == 200 and again.json()["outcome"] == "duplicate"
    time.sleep(1.0)
    assert len(fake_github.writes()) == writes and fake_github.comments(REPO, PR) == [comment]
    assert len(srv.deliveries()) == 1

    add_run(fake_github, RUN + 1, a=0.86)
    srv.send(with_run(body, RUN + 1), "workflow_run", "delivery-2")
    srv.wait_settled(2)
    (edited,) = fake_github.comments(REPO, PR)
    assert edited["id"] == comment["id"] and str(RUN + 1) in edited["body"]
    assert [c.method for c in fake_github.writes()] == ["POST", "PATCH"]
    lines = [x for x in srv.log_lines() if x.get("delivery") == "delivery-2" and "attempt" in x]
    assert lines[0]["investigation"] == "octo-drop" and lines[0]["outcome"] == "done"
    assert "2 run(s) recorded, comment updated" in lines[0]["detail"] and isinstance(lines[0]["ms"], int)


def test_a_job_updates_the_comment_as_its_leg_finishes(server, fake_github, tmp_path):
    add_run(fake_github, RUN)
    fake_github.add_pull(REPO, PR)
    srv = server()
    run_payload = json.loads(fixture_bytes(WITH_PR))
    fake_github._runs[(REPO, RUN)]["pull_requests"] = run_payload["workflow_run"]["pull_requests"]
    job = dict(fake_github._jobs[(REPO, RUN)][1])
    payload = {"action": "completed", "workflow_job": job, "repository": run_payload["repository"],
               "sender": run_payload["sender"]}
    assert srv.send(json.dumps(payload).encode(), "workflow_job").status_code == 202
    srv.wait_settled(1)
    assert runs(tmp_path) == [(str(RUN), "gpu-b", "passed")]
    (comment,) = fake_github.comments(REPO, PR)
    assert MARKER in comment["body"]


def test_a_run_of_no_pr_goes_where_the_rule_file_matches_its_branch(server, fake_github, tmp_path):
    write_rules(tmp_path, branch="mast*")
    add_run(fake_github, RUN)
    srv = server()
    srv.send(fixture_bytes(NO_PR), "workflow_run")
    assert srv.wait_settled(1)[0][1] == "done"
    assert [c for _, c, _ in runs(tmp_path)] == ["gpu-a", "gpu-b"]

    write_rules(tmp_path)  # no branch: a run of no PR is not ours
    srv.stop()
    srv = server()
    add_run(fake_github, RUN + 5)
    srv.send(with_run(fixture_bytes(NO_PR), RUN + 5), "workflow_run")
    rows = srv.wait_settled(2)
    assert rows[-1][1] == "ignored" and len(runs(tmp_path)) == 2


def test_eight_deliveries_at_once_make_one_comment(server, fake_github, tmp_path):
    for i in range(8):
        add_run(fake_github, RUN + i)
    fake_github.slow("POST", f"/repos/{REPO}/issues/{PR}/comments", 3.0)  # a slow create: the others look meanwhile
    srv = server("--workers", "8")
    body = fixture_bytes(WITH_PR)
    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda i: srv.send(with_run(body, RUN + i), "workflow_run").status_code, range(8)))
    assert codes == [202] * 8
    rows = srv.wait_settled(8)
    assert [r[1] for r in rows] == ["done"] * 8
    assert len(fake_github.comments(REPO, PR)) == 1
    assert len(fake_github.calls("POST")) == 1
    assert len(runs(tmp_path)) == 16


def test_a_failing_delivery_is_retried_then_listed(server, fake_github, tmp_path):
    srv = server("--max-attempts", "2", "--auth", "dash-token-123")
    srv.send(fixture_bytes(WITH_PR), "workflow_run", "doomed")  # the fake has no such run: 404
    rows = srv.wait_settled(1, timeout=30)
    assert rows[0][1:3] == ("failed", 2) and "404" in rows[0][3]
    assert len(fake_github.calls("GET", f"/repos/{REPO}/actions/runs/{RUN}")) == 2
    assert srv.get("/deliveries").status_code == 401
    page = srv.get("/deliveries", headers={"Authorization": "Bearer dash-token-123"})
    assert page.status_code == 200 and "doomed" in page.text
    data = srv.get("/deliveries.json", headers={"Authorization": "Bearer dash-token-123"}).json()
    assert [d["id"] for d in data["failed"]] == ["doomed"] and data["counts"] == {"failed": 1}
    assert srv.get("/healthz").json() == {"ok": True, "workers": 4, "stuck": 0}
    logged = [x for x in srv.log_lines() if x.get("delivery") == "doomed" and "attempt" in x]
    assert [x["outcome"] for x in logged] == ["retrying", "failed"]

    add_run(fake_github, RUN)  # the cause fixed, the delivery is redelivered from GitHub's page
    again = srv.send(fixture_bytes(WITH_PR), "workflow_run", "doomed")
    assert again.status_code == 202 and again.json()["outcome"] == "requeued"
    assert srv.wait_settled(1)[0][1:3] == ("done", 1)
    assert len(fake_github.comments(REPO, PR)) == 1


def test_dashboard_escapes_and_serves_json(server, fake_github, tmp_path, cli):
    add_run(fake_github, RUN)
    srv = server()
    srv.send(fixture_bytes(WITH_PR), "workflow_run")
    srv.wait_settled(1)
    r = cli("add-run", "--pr", str(PR), "--run-id", "<img src=x onerror=alert(2)>", "--config", "gpu-c",
            "--status", "failed", "--url", "javascript:alert(1)")
    assert r.code == 0, r.err
    index = srv.get("/")
    assert index.status_code == 200
    assert "<script>alert" not in index.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in index.text
    assert f'href="/pr/{REPO}/{PR}"' in index.text and f"{REPO}#{PR}" in index.text
    page = srv.get(f"/pr/{REPO}/{PR}")
    assert page.status_code == 200 and "Leg &lt;b&gt;B&lt;/b&gt; is broken" in page.text
    assert re.search(r"<svg[^>]*class=\"chart\"", page.text) and page.text.count('<rect class="bar"') == 2
    doc = srv.get(f"/pr/{REPO}/{PR}.json").json()
    assert doc["investigation"]["id"] == "octo-drop" and len(doc["runs"]) == 3
    assert srv.get(f"/pr/{REPO}/999").status_code == 404
    hostile = srv.get(f"/pr/{REPO}/{PR}").text
    assert 'href="javascript:' not in hostile and "&lt;img src=x onerror=alert(2)&gt;" in hostile
    assert srv.get("/pr/x/y/abc").status_code == 404


def test_as_a_github_app_with_installation_tokens_refreshed_before_expiry(server, fake_github, tmp_path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    (tmp_path / "app.pem").write_text(private)
    fake_github.enable_app("4242", public, installations={REPO: 777}, token_lifetime=240)  # < 5 min: refresh
    for i in range(2):
        add_run(fake_github, RUN + i)
    srv = server(env={"TRIAGE_APP_ID": "4242", "TRIAGE_APP_PRIVATE_KEY_FILE": str(tmp_path / "app.pem"),
                      "GITHUB_TOKEN": ""})
    body = fixture_bytes(WITH_PR)  # carries no installation: the repository's is looked up
    srv.send(body, "workflow_run")
    srv.wait_settled(1)
    srv.send(with_run(body, RUN + 1), "workflow_run")
    rows = srv.wait_settled(2)
    assert [r[1] for r in rows] == ["done", "done"], rows
    (comment,) = fake_github.comments(REPO, PR)
    assert comment["user"]["login"] == "triage-app[bot]" and str(RUN + 1) in comment["body"]
    assert len(fake_github.calls("POST", "/app/installations/777/access_tokens")) == 2
    assert len(fake_github.calls("GET", f"/repos/{REPO}/installation")) == 1
    api = [c for c in fake_github.calls() if c.path.startswith("/repos/") and not c.path.endswith("/installation")]
    assert all(c.headers["authorization"][7:] in fake_github.installation_tokens for c in api)
    assert "PRIVATE KEY" not in srv.log() and not any(t in srv.log() for t in fake_github.installation_tokens)
    started = [x for x in srv.log_lines() if x.get("outcome") == "listening"]
    assert started[0]["github"] == "GitHub App 4242"


def test_a_run_of_a_repository_nobody_follows_costs_no_github_call(server, fake_github, tmp_path):
    srv = server()
    data = json.loads(fixture_bytes(WITH_PR))
    data["repository"]["full_name"] = "someone-else/their-repo"
    assert srv.send(json.dumps(data).encode(), "workflow_run").status_code == 202
    job = {"action": "completed", "repository": data["repository"],
           "workflow_job": {"id": 5, "run_id": 6, "name": "build", "status": "completed", "conclusion": "success"}}
    assert srv.send(json.dumps(job).encode(), "workflow_job").status_code == 202  # its PR would need the run
    rows = srv.wait_settled(2)
    assert [r[1] for r in rows] == ["ignored", "ignored"]
    assert all("no investigation follows someone-else/their-repo" in r[3] for r in rows)
    assert fake_github.requests == []
