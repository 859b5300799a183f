"""The bundled investigation's replay and autopilot: where it starts, its answer, an oracle for its runs."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import EXAMPLE_RUNS


START = ["nightly-current", "28873810961"]  # the two failing scheduled nightlies of the base config


FIRST_BAD = "v0.5.14-rocm720-mi35x-20260626"

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
