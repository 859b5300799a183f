"""lm-eval-harness results JSON (``results_*.json``, what ``lm_eval --output_path`` writes).

Each task's entry in ``results`` holds its metrics as ``METRIC,FILTER`` keys
(``exact_match,strict-match``, ``acc,none``) beside their standard errors
(``…_stderr,FILTER``, not read).  A metric is named ``TASK.METRIC`` when its
filter is ``none``, else ``TASK.METRIC.FILTER`` (``gsm8k.exact_match.strict-match``,
``hellaswag.acc_norm``).  A proportion (accuracy, exact match: a value in
[0, 1] of a metric in :data:`PROPORTIONS`) gets its n from the file:
``n-samples[TASK].effective`` (the questions asked, after ``--limit``), a
group's the sum of its subtasks'.  Other metrics (perplexity, BLEU) have no n.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from triage.errors import InputError
from triage.ingest.results.common import Found, metric_name, number
from triage.ingest.results.safe import entries_limit

__all__ = ["read_lm_eval", "looks_like"]

#: Metrics that are the share of questions answered right.
PROPORTIONS = frozenset({"acc", "acc_norm", "exact_match", "em", "mc1", "pass@1", "pass_at_1", "contains",
                         "prompt_level_strict_acc", "prompt_level_loose_acc", "inst_level_strict_acc",
                         "inst_level_loose_acc"})


def looks_like(doc: Any) -> bool:
    return (isinstance(doc, dict) and isinstance(doc.get("results"), dict)
            and any(k in doc for k in ("n-samples", "n-shot", "versions", "configs", "group_subtasks")))


def _count(entry: Any) -> Optional[int]:
    if isinstance(entry, dict):
        entry = entry.get("effective", entry.get("original"))
    if isinstance(entry, int) and not isinstance(entry, bool) and 1 <= entry < 2**31:
        return entry
    return None


def sample_counts(doc: Mapping[str, Any]) -> dict[str, int]:
    """Each task's n, a group's the sum of its subtasks' (when every one is known)."""
    raw = doc.get("n-samples") if isinstance(doc.get("n-samples"), dict) else {}
    counts = {task: n for task, v in raw.items() if (n := _count(v)) is not None}
    groups = doc.get("group_subtasks") if isinstance(doc.get("group_subtasks"), dict) else {}
    for _ in range(len(groups)):  # groups of groups: settle in a few passes
        for group, subtasks in groups.items():
            if group in counts or not isinstance(subtasks, list) or not subtasks:
                continue
            if all(isinstance(t, str) and t in counts for t in subtasks):
                counts[group] = sum(counts[t] for t in subtasks)
    return counts


def read_lm_eval(path: str, doc: Mapping[str, Any]) -> Found:
    results = doc["results"]
    entries_limit(path, len(results), "tasks")
    counts = sample_counts(doc)
    found = Found()
    for task, entry in results.items():
        if not isinstance(entry, dict):
            raise InputError(f"{path}: results.{str(task)[:80]}: expected an object of metrics")
        for key, raw in entry.items():
            metric, _, filt = str(key).partition(",")
            value = number(raw)
            if value is None or metric.endswith("_stderr") or metric == "alias":
                continue
            name = metric_name(f"{task}.{metric}" + (f".{filt}" if filt and filt != "none" else ""))
            n = counts.get(task) if metric in PROPORTIONS and 0 <= value <= 1 else None
            found.add(name, value, n)
            found.said.append(f"{name}={value:g}" + (f"/{n}" if n else ""))
    if not found.metrics:
        raise InputError(f"{path}: lm-eval results with no numeric metric")
    return found
