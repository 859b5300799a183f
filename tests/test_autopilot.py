"""`triage autopilot` against the fake GitHub: dispatched runs come back with the bundled investigation's results."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

import triage.github
from tests.conftest import EXAMPLE_RUNS
from tests.test_replay import FIRST_BAD, START

REPO, PR = "sgl-project/sglang", 30433
NON_MTP = {"kimik26-fp8-1k1k-1p1d", "kimik26-fp8-1k1k-1p1d-dev29855", "kimik26-fp8-1k1k-1p1d-srt67361ff",
           "kimik26-fp8-1k1k-1p1d-knowngood", "kimik26-fp8-1k1k-1p1d-imagebisect"}
FAILURE_LINES = {"unregistered-model": "ValueError: 'KimiK25ForConditionalGeneration' is not a registered model",
                 "init-abort": "Fatal Python error: Aborted", "blob-not-found": "BlobNotFound",
                 "abi-mismatch": "ImportError: libaiter.so: undefined symbol: foo"}
RECIPE_DISPATCH = "    dispatch: {workflow: nightly-disagg.yml, ref: amd/kimik26-disagg-decode-repro, inputs: {configs: '{ids}'}}\n"
BISECT_DISPATCH = ("    dispatch: {workflow: nightly-disagg.yml, ref: amd/kimik26-knowngood-67361ff,\n"
                   "               inputs: {image: '{point}', configs: kimik26-fp8-1k1k-1p1d-imagebisect}}\n")


def autopilot_rules(rules_dir: Path, budget: str = "{max_runs: 6}") -> None:
    """The bundled rule file with dispatch: beside run:, an autopilot budget, and
    extractors for the image and python a CI log prints."""
    path = rules_dir / "kimik26-disagg.yaml"
    text = path.read_text(encoding="utf-8")
    if budget:
        text = text.replace("  config_prefix: kimik26-fp8-1k1k-\n", f"  config_prefix: kimik26-fp8-1k1k-\n  autopilot: {budget}\n")
    text = text.replace("    run: *dispatch\n", "    run: *dispatch\n" + RECIPE_DISPATCH)
    marker = "-f image={point} -f configs=kimik26-fp8-1k1k-1p1d\n"
    text = text.replace(marker, marker + BISECT_DISPATCH)
    text = text.replace("extractors:\n", "extractors:\n  - {id: image, pattern: '^image=(?P<value>\\S+)', provenance: image}\n"
                                         "  - {id: python, pattern: '^python=(?P<value>\\S+)', provenance: python}\n")
    path.write_text(text, encoding="utf-8")


class Oracle:
    """The bundled investigation's recorded runs, handed out once each as dispatched runs come back."""

    def __init__(self, fake, leave_out=()):
        self.fake = fake
        self.left = [json.loads(x) for x in EXAMPLE_RUNS.read_text(encoding="utf-8").splitlines() if x.strip()]
        self.left = [r for r in self.left if r["run_id"] not in START and r["run_id"] not in leave_out
                     and not r.get("excluded")]
        self.next_id = 29_900_000_000
        self.handed: list[dict] = []

    def answer(self, inputs: dict) -> dict | None:
        if "image" in inputs:
            return next((r for r in self.left if r["config"] in NON_MTP and r.get("provenance", {}).get("python") == "67361ff"
                         and r.get("provenance", {}).get("image") == inputs["image"]), None)
        return next((r for r in self.left if r["config"] == inputs.get("configs")), None)

    def __call__(self, repo, workflow, ref, inputs):
        rec = self.answer(inputs)
        if rec is None:
            return None
        self.left.remove(rec)
        self.handed.append(rec)
        prov = rec.get("provenance", {})
        lines = [f"{k}={prov[k]}" for k in ("image", "python") if k in prov]
        if rec.get("signature"):
            lines.append(FAILURE_LINES[rec["signature"]])
        if "gsm8k" in rec.get("metrics", {}):
            lines.append(f"[gsm8k] accuracy={rec['metrics']['gsm8k']['value']}")
        self.next_id += 1
        config = inputs.get("configs") or rec["config"]
        return self.fake.add_workflow_run(REPO, self.next_id, name="Nightly", head_branch=ref, jobs=[
            {"name": config, "conclusion": "success" if rec["status"] == "passed" else "failure",
             "log": "".join(f"2026-07-10T08:00:{i:02d}.1Z {x}\n" for i, x in enumerate(lines))}])


def import_start(cli, tmp_path: Path, *more: str) -> None:
    """Record only the two failing nightlies (and the runs ``more`` names)."""
    start = tmp_path / "start.jsonl"
    start.write_text("".join(x + "\n" for x in EXAMPLE_RUNS.read_text(encoding="utf-8").splitlines()
                             if json.loads(x)["run_id"] in (*START, *more)), encoding="utf-8")
    assert cli("import", str(start)).code == 0


@pytest.fixture
def pilot(cli, fake_github, rules_dir, tmp_path, monkeypatch):
    """The fake GitHub, the rules with dispatch:, and only the two failing nightlies recorded."""
    monkeypatch.setattr(triage.github, "GitHubClient", functools.partial(triage.github.GitHubClient, sleep=lambda s: None))
    autopilot_rules(rules_dir)
    import_start(cli, tmp_path)
    fake_github.on_dispatch = Oracle(fake_github)
    return fake_github


def test_autopilot_reaches_the_recorded_verdict_one_run_at_a_time(cli, pilot):
    started = []
    for _ in range(10):
        r = cli("autopilot", "--pr", str(PR))
        assert r.code == 0, r.err
        if not r.out.startswith("started "):
            break
        started.append(r.out)
        # before its run is recorded: waiting, nothing sent
        posts = len(pilot.dispatches)
        again = cli("autopilot", "--pr", str(PR))
        assert again.code == 0 and again.out.startswith("waiting for ") and len(pilot.dispatches) == posts
        run_id = pilot.on_dispatch.next_id
        rec = cli("add-run", "--pr", str(PR), "--from-github", str(run_id))
        assert rec.code == 0, rec.err
    assert r.out.startswith("the verdict holds: image-regression confirmed"), r.out
    assert len(started) == 4 <= 6  # within max_runs
    assert [d["inputs"].get("image") for d in pilot.dispatches] == [
        "v0.5.13.post1-rocm720-mi35x-20260623", "latest", "v0.5.13.post1-rocm720-mi35x-20260625", FIRST_BAD]
    assert all(d["workflow"] == "nightly-disagg.yml" and d["ref"] == "amd/kimik26-knowngood-67361ff"
               for d in pilot.dispatches)
    assert "it decides the MI35x image tags bisect (image-regression)" in started[0]
    data = json.loads(cli("report", "--pr", str(PR), "--format", "json").out)
    assert {h["id"]: h["status"] for h in data["hypotheses"]}["image-regression"] == "confirmed"
    image = next(b for b in data["bisects"] if b["id"] == "image")
    assert image["first_bad"] == FIRST_BAD and image["done"]
    md = cli("report", "--pr", str(PR)).out
    assert ("started kimik26-fp8-1k1k-1p1d-imagebisect at v0.5.13.post1-rocm720-mi35x-20260623: "
            "it decides the MI35x image tags bisect (image-regression) (run 29900000001, recorded)") in md


def test_autopilot_never_starts_twice_for_one_evaluation(cli, pilot, tmp_path):
    import sqlite3

    assert cli("autopilot", "--pr", str(PR)).out.startswith("started ")
    # as if its run had been recorded, but nothing new came in: the evaluation is the same
    con = sqlite3.connect(tmp_path / "kb.sqlite")
    con.execute("update dispatch set done_at = '2026-07-10 09:00:00'")
    con.commit()
    con.close()
    r = cli("autopilot", "--pr", str(PR))
    assert r.code == 0 and "already started for this evaluation" in r.out
    assert len(pilot.dispatches) == 1


def test_autopilot_stays_within_its_budget(cli, pilot, rules_dir):
    text = (rules_dir / "kimik26-disagg.yaml").read_text(encoding="utf-8")
    (rules_dir / "kimik26-disagg.yaml").write_text(text.replace("autopilot: {max_runs: 6}", "autopilot: {max_runs: 2}"),
                                                   encoding="utf-8")
    for _ in range(2):
        assert cli("autopilot", "--pr", str(PR)).out.startswith("started ")
        assert cli("add-run", "--pr", str(PR), "--from-github", str(pilot.on_dispatch.next_id)).code == 0
    r = cli("autopilot", "--pr", str(PR))
    assert r.out.startswith("the budget is spent (2 of 2 runs)") and len(pilot.dispatches) == 2


def test_dry_run_sends_nothing_and_says_what_it_would_start(cli, pilot):
    pilot.require_auth = True
    r = cli("autopilot", "--pr", str(PR), "--dry-run")
    assert r.code == 0, r.err
    assert r.out == ("would start bisect:image at v0.5.13.post1-rocm720-mi35x-20260623: it decides the MI35x image "
                     "tags bisect (image-regression) (workflow nightly-disagg.yml on amd/kimik26-knowngood-67361ff, "
                     "-f image=v0.5.13.post1-rocm720-mi35x-20260623 -f configs=kimik26-fp8-1k1k-1p1d-imagebisect)\n")
    assert pilot.requests == [] and pilot.dispatches == []


def test_without_autopilot_in_the_rules_a_dry_run_says_so(cli, fake_github, rules_dir, tmp_path, monkeypatch):
    autopilot_rules(rules_dir, budget="")
    import_start(cli, tmp_path)
    monkeypatch.delenv("GITHUB_TOKEN")
    r = cli("autopilot", "--pr", str(PR), "--dry-run")
    assert r.code == 0, r.err
    assert r.out.startswith("autopilot is not enabled for kimik26-disagg: the rule file has no autopilot:")
    assert "\nwould start bisect:image at " in r.out and fake_github.requests == []


def test_the_pr_label_enables_it_and_a_known_failure_awaiting_its_remedy_is_passed_over(cli, fake_github, rules_dir,
                                                                                         tmp_path, monkeypatch):
    monkeypatch.setattr(triage.github, "GitHubClient", functools.partial(triage.github.GitHubClient, sleep=lambda s: None))
    autopilot_rules(rules_dir, budget="")
    # the backend made ten times as likely: its recipe, whose last run hit a setup error, ranks first
    path = rules_dir / "kimik26-disagg.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace(
        "  - id: attention-backend\n", "  - id: attention-backend\n    prior: 10\n"), encoding="utf-8")
    import_start(cli, tmp_path, "28903343346")
    fake_github.add_pull(REPO, PR)
    r = cli("autopilot", "--pr", str(PR))
    assert r.code == 0 and "no triage:autopilot label" in r.out and fake_github.dispatches == []
    fake_github.add_pull(REPO, PR, labels=["triage:autopilot"])
    r = cli("autopilot", "--pr", str(PR))
    assert r.code == 0, r.err
    assert r.out.startswith("passed over kimik26-fp8-1k1k-1p1d-aiterdecode: fix first: unregistered-model (setup-error)")
    assert [d["inputs"].get("image") for d in fake_github.dispatches] == ["v0.5.13.post1-rocm720-mi35x-20260623"]


def test_a_lost_answer_is_never_sent_again_and_a_run_without_id_is_found_by_its_config(cli, pilot):
    pilot.inject("POST", "/repos/*/actions/workflows/*/dispatches", 502)
    r = cli("autopilot", "--pr", str(PR))
    assert r.code == 0 and r.out.startswith("started? bisect:image at ") and "it may have started" in r.out
    assert cli("autopilot", "--pr", str(PR)).out.startswith("waiting for bisect:image at ")
    assert len(pilot.calls("POST")) == 1
    # GitHub gave no run id: a run of one of the bisect's configs recorded after it ends the wait
    assert cli("add-run", "--pr", str(PR), "--run-id", "7", "--config", "kimik26-fp8-1k1k-1p1d-imagebisect",
               "--metric", "gsm8k=0.941/1319", "--status", "passed", "--set", "python=67361ff",
               "--set", "image=v0.5.13.post1-rocm720-mi35x-20260623").code == 0
    r = cli("autopilot", "--pr", str(PR))
    assert r.out.startswith("started bisect:image at latest"), r.out


def test_run_for_takes_an_open_session_and_a_dry_run_needs_no_client(cli, pilot, tmp_path, monkeypatch):
    from triage.github.autopilot import run_for
    from triage.kb import store

    with store.session(store.resolve_url(None)) as s:
        step = run_for(s, "kimik26-disagg", None, dry_run=True)
    assert step.action == "would-start" and step.dispatch["point"] == "v0.5.13.post1-rocm720-mi35x-20260623"
    assert step.dispatch["inputs"] == {"image": "v0.5.13.post1-rocm720-mi35x-20260623",
                                       "configs": "kimik26-fp8-1k1k-1p1d-imagebisect"}
    assert pilot.requests == []
    monkeypatch.delenv("GITHUB_TOKEN")
    r = cli("autopilot", "--pr", str(PR))
    assert r.code == 2 and "no GitHub token" in r.err and pilot.requests == []
