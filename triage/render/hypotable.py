"""`triage hypotheses` as a terminal table that reads at any width from 80 to 200.

Columns are dropped before they are squeezed: the title only shows where
the evidence still gets a column of its own; the evidence is each
hypothesis's first reason, cut to two lines of its column (with how many
more there are). ``wide`` shows the titles and every reason in full.
"""

from __future__ import annotations

from typing import Any

from triage.render.report import STATUS_WORDS

EVIDENCE_MIN = 30  # the evidence column is never narrower than this
TITLE_FROM = 160  # the title column shows from this width on
ID_MAX = 36  # a longer id (with its tree) folds
BORDERS = 3  # a column's padding and its rule, in characters


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def hypotheses_table(model: dict, width: int, wide: bool, cell: Any) -> Any:
    """The hypotheses of ``model`` as a Rich table for a terminal ``width`` columns
    wide; ``cell`` makes a cell of stored text (no markup read in it)."""
    from rich.table import Table

    hyps = model["hypotheses"]
    inv = model["investigation"]
    ids = [h["tree"] + h["id"] for h in hyps]
    id_w = min(ID_MAX, max([len("id")] + [len(x) for x in ids]))
    status_w = max([len("status")] + [len(STATUS_WORDS[h["status"]]) for h in hyps])
    show_title = wide or width >= TITLE_FROM
    title_w = min(40, max([len("title")] + [len(h["title"]) for h in hyps])) if show_title else 0
    columns = 4 if show_title else 3
    evidence_w = max(EVIDENCE_MIN, width - id_w - status_w - title_w - BORDERS * columns - 1)
    table = Table(title=cell(f"{inv['title']} ({inv['repo']}#{inv['pr']})"), title_justify="left",
                  expand=True, width=None if wide else width)
    table.add_column("id", width=id_w, overflow="fold")
    if show_title:
        table.add_column("title", width=None if wide else title_w, overflow="fold")
    table.add_column("status", no_wrap=True, width=status_w)
    table.add_column("evidence", overflow="fold", ratio=1)
    for tree_id, h in zip(ids, hyps):
        reasons = [x["reason"] for x in h["summary"]]
        if wide:
            evidence = "; ".join(reasons) or "—"
        elif reasons:
            more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
            evidence = _cut(reasons[0], 2 * evidence_w - len(more) - 2) + more
        else:
            evidence = "—"
        row = [tree_id] + ([h["title"]] if show_title else []) + [STATUS_WORDS[h["status"]], evidence]
        table.add_row(*map(cell, row))
    return table
