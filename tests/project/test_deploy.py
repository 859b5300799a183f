"""The team set-up files agree with the code: what the Dockerfile copies and
runs, what compose.yaml passes to the server replicas, and what the README's
"Run the bot for a team" says the App needs."""

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


def compose() -> dict:
    return yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))


def replicas() -> dict[str, dict]:
    """The services that run the server (the image built here)."""
    return {name: service for name, service in compose()["services"].items() if service.get("build") == "."}


def test_compose_runs_two_replicas_on_postgresql_and_gives_them_what_the_server_reads():
    services = compose()["services"]
    servers = replicas()
    assert len(servers) == 2 and services["db"]["image"].startswith("postgres:")
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "triage").rglob("*.py"))
    envs = [server["environment"] for server in servers.values()]
    assert envs[0] == envs[1]  # one knowledge base, one App, one secret
    env = envs[0]
    assert env["TRIAGE_DB"].startswith("postgresql+psycopg://triage:") and "@db:5432/" in env["TRIAGE_DB"]
    assert all(f'"{name}"' in source for name in env), [n for n in env if f'"{n}"' not in source]
    ports = []
    for server in servers.values():
        assert server["depends_on"]["db"]["condition"] == "service_healthy"
        (port,) = server["ports"]
        assert port.startswith("127.0.0.1:") and port.endswith(":8080")  # behind a TLS proxy
        ports.append(port)
        assert server["environment"]["TRIAGE_APP_PRIVATE_KEY_FILE"] == "/run/secrets/" + server["secrets"][0]
    assert len(set(ports)) == 2


def team_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("### Run the bot for a team\n")
    return text[start:text.index("\n## ", start)]


def table(section: str, header: str) -> list[list[str]]:
    """The rows of the Markdown table whose first column is ``header``."""
    lines = section.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {header} |"))
    out = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        out.append([cell.strip() for cell in line.strip("|").split("|")])
    return out


#: Which repository permission a family of GitHub API paths needs (none: the App's own endpoints).
PERMISSIONS = {"actions": "Actions", "pulls": "Pull requests", "issues": "Issues", "collaborators": "Metadata",
               "check-runs": "Checks", "installation": None}


def test_the_team_section_lists_the_permissions_the_code_needs():
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "triage").rglob("*.py"))
    paths = re.findall(r'"/repos/\{[^}]+\}/([^"]+)"', source)
    # a family: the path's first part, or the kind of object it ends in (a commit's check runs are Checks')
    families = {"check-runs" if "check-runs" in path else path.split("/")[0] for path in paths}
    assert {"actions", "issues", "pulls", "collaborators"} <= families
    unknown = families - set(PERMISSIONS)
    assert not unknown, f"a new kind of GitHub call: name its permission here and in the README: {unknown}"
    needed = {PERMISSIONS[f] for f in families} - {None}
    listed = {row[0]: row[1] for row in table(team_section(), "Permission")}
    assert set(listed) == needed
    assert listed["Actions"] == "read and write"  # a dispatch writes
    assert listed["Issues"] == "read and write" and listed["Metadata"] == "read"


def test_the_team_section_lists_the_events_the_webhook_handles():
    from triage.serve import webhook

    listed = {re.search(r"\(`(\w+)`\)", row[0]).group(1) for row in table(team_section(), "Event")}
    examples = {"workflow_run": {"action": "completed"}, "workflow_job": {"action": "completed"},
                "issue_comment": {"action": "created", "comment": {"body": "/triage help"}}}
    assert listed == set(examples)
    assert all(webhook.wanted(event, payload) for event, payload in examples.items())
    for other in ("pull_request", "push", "check_suite", "check_run", "issues", "pull_request_review_comment"):
        assert not webhook.wanted(other, {"action": "completed"}) and not webhook.wanted(other, {"action": "created"})


def test_the_team_section_names_the_compose_services_and_settings():
    section = team_section()
    assert all(f"`{name}`" in section for name in replicas()) and "`db`" in section
    assert "--lease" in section and "PostgreSQL" in section
    env = set(next(iter(replicas().values()))["environment"])
    assert set(re.findall(r"`(TRIAGE_\w+)`", section)) <= env
    for port in (p for server in replicas().values() for p in server["ports"]):
        assert port.rsplit(":", 1)[0] in section  # where each replica listens


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
    for server in replicas().values():
        assert server["environment"]["TRIAGE_DASHBOARD_TOKEN"].startswith("${TRIAGE_DASHBOARD_TOKEN:?")
