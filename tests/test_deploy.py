"""The team set-up files agree with the code: what the Dockerfile copies and
runs, and what compose.yaml passes to the server."""

from __future__ import annotations

import json
import re
import tomllib

import yaml

from tests.conftest import ROOT


def dockerfile() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    return [tuple(line.split(None, 1)) for line in text.splitlines() if line.strip() and not line.startswith("#")]


def test_the_image_copies_what_exists_and_installs_known_extras():
    steps = dockerfile()
    copies = [args.split()[0] for op, args in steps if op == "COPY"]
    assert copies and all((ROOT / path).exists() for path in copies), copies
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    (install,) = [args for op, args in steps if op == "RUN" and "pip install" in args]
    wanted = re.search(r"'\.\[([\w,]+)\]'", install).group(1).split(",")
    assert set(wanted) == {"postgres", "serve"} <= set(extras)


def test_the_image_runs_triage_serve_with_real_options(cli):
    steps = dict(dockerfile())
    assert json.loads(steps["ENTRYPOINT"]) == ["triage"]
    cmd = json.loads(steps["CMD"])
    assert cmd[0] == "serve" and cmd[cmd.index("--host") + 1] == "0.0.0.0"
    help_text = cli("serve", "--help").out
    assert all(re.search(rf"(?<![\w-]){o}(?![\w-])", help_text) for o in cmd if o.startswith("--"))
    assert "/healthz" in steps["HEALTHCHECK"]


def test_compose_gives_the_server_what_it_reads():
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    server = compose["services"]["triage"]
    env = server["environment"]
    assert env["TRIAGE_DB"].startswith("postgresql+psycopg://triage:") and "@db:5432/" in env["TRIAGE_DB"]
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "triage").rglob("*.py"))
    assert all(f'"{name}"' in source for name in env), [n for n in env if f'"{n}"' not in source]
    assert server["depends_on"]["db"]["condition"] == "service_healthy"
    assert server["ports"] == ["127.0.0.1:8080:8080"]  # behind a TLS proxy
    assert env["TRIAGE_APP_PRIVATE_KEY_FILE"] == "/run/secrets/" + server["secrets"][0]


def test_the_image_without_a_dashboard_token_does_not_start(cli, monkeypatch):
    """The image listens on 0.0.0.0: without TRIAGE_DASHBOARD_TOKEN the server
    refuses to start (exit 2) rather than show the dashboard to anyone; compose
    will not start it without one either (#30)."""
    cmd = json.loads(dict(dockerfile())["CMD"])
    monkeypatch.setenv("TRIAGE_WEBHOOK_SECRET", "s" * 32)
    monkeypatch.delenv("TRIAGE_DASHBOARD_TOKEN", raising=False)
    r = cli(*cmd)
    assert (r.code, r.err) == (2, "Error: --host 0.0.0.0 shows the dashboard to the network: set "
                                  "TRIAGE_DASHBOARD_TOKEN (or --auth TOKEN), or pass --open-dashboard to show it "
                                  "to anyone\n")
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    assert compose["services"]["triage"]["environment"]["TRIAGE_DASHBOARD_TOKEN"].startswith(
        "${TRIAGE_DASHBOARD_TOKEN:?")
