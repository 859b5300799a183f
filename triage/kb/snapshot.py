"""Stored evaluations: what lets a report on an unchanged knowledge base skip the engine.

An evaluation is a pure function of an investigation's rule files (and the
shared ones: signatures), its runs, its manual evidence and the code of the
engine and renderer.  :func:`fingerprint` sums those up in a few indexed
queries whose cost does not grow with the number of runs (an aggregate over
a row per config) nor with other investigations; a snapshot is used only
while its fingerprint is the current one.

What is checked, and why it is enough:

- rule files: the content hash of every loaded file (``rule_source``);
- runs: their count, the largest primary key, the newest ``updated_at`` and
  the sum of every ``updated_at`` (every write of a run sets it: add-run,
  import, exclude, include), as every writer of runs keeps them per config
  (:mod:`triage.kb.configruns`);
- manual evidence: its count and largest primary key (it is only added);
- code: the version, and the hashes an installed wheel's ``RECORD`` lists
  for the package's files (else the size and modification time of every
  module of the package and of the shipped templates).

The view is kept in parts (:func:`write`): its long lists each in a row of their
own, named by the digest of their text, so that a view that differs from the stored
one in a few small fields writes those, not megabytes again.

An import may replace a run with a record older than its config's newest
run, which only the sum of write times shows: an evaluation that re-derived
anything or changed a status drops the stored view as well (:func:`drop`), and
the next report builds it again.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Optional

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from triage.kb import tables
from triage.stamp import code_stamp

def fingerprint(s: Session, iid: str) -> str:
    """What an evaluation of ``iid`` would be derived from, as one hash."""
    runs, manual = tables.ConfigRuns, tables.ManualEvidence
    mine = runs.c.investigation_id == iid
    counts = select(
        select(func.sum(runs.c.count)).where(mine).scalar_subquery(),
        select(func.max(runs.c.max_pk)).where(mine).scalar_subquery(),
        select(func.max(runs.c.max_updated)).where(mine).scalar_subquery(),
        select(func.sum(runs.c.times)).where(mine).scalar_subquery(),
        select(func.count()).select_from(manual).where(manual.c.investigation_id == iid).scalar_subquery(),
        select(func.max(manual.c.pk)).where(manual.c.investigation_id == iid).scalar_subquery(),
    )
    h = hashlib.sha256(definitions(s).encode())  # the code and the rule files
    h.update(repr(tuple(s.execute(counts).one())).encode())
    return h.hexdigest()


#: The ``meta`` row that names the definitions an investigation was last evaluated under.
DEFINITIONS = "definitions:{}"


def definitions(s: Session) -> str:
    """What every piece of an evaluation rests on besides runs and manual evidence, as one
    hash: the code and every rule file (a change of either makes the next evaluation whole)."""
    src = tables.RuleSource
    h = hashlib.sha256(code_stamp().encode())
    for path, sha in s.execute(select(src.c.path, src.c.sha256).order_by(src.c.path)).all():
        h.update(f"\n{path}\0{sha}".encode())
    return h.hexdigest()


def evaluated_under(s: Session, iid: str) -> Optional[str]:
    """The :func:`definitions` ``iid`` was last evaluated under (None: not known)."""
    from triage.kb.evaluations import _get_meta

    return _get_meta(s, DEFINITIONS.format(iid))


def note_definitions(s: Session, iid: str) -> None:
    """Keep the :func:`definitions` of the evaluation of ``iid`` just stored (written when they changed)."""
    from triage.kb.evaluations import _put_meta

    now = definitions(s)
    if evaluated_under(s, iid) != now:
        _put_meta(s, DEFINITIONS.format(iid), now)


def stands(s: Session, iid: str) -> bool:
    """Whether the stored view of ``iid`` is of what its evaluation would be derived from now."""
    t = tables.Snapshot
    return s.execute(select(t.c.fingerprint).where(t.c.investigation_id == iid)).scalar() == fingerprint(s, iid)


def read(s: Session, iid: str, fp: str, *, parts: bool = True) -> Optional[dict]:
    """The stored evaluation of ``iid`` if it was derived from ``fp``, else None.

    Its ``similar`` ("Seen elsewhere") is there only while no evaluation has
    changed stored evidence since it was computed (see :func:`others`).
    ``parts=False``: the view's long lists are not read (None in the model), for a caller
    that prints the JSON report kept with it (:func:`read_json`).
    """
    from triage.kb.evaluations import EVIDENCE_VERSION

    t, meta = tables.Snapshot, tables.Meta
    version = select(meta.c.value).where(meta.c.key == EVIDENCE_VERSION).scalar_subquery()
    row = s.execute(select(t.c.fingerprint, t.c.data, t.c.others, t.c.similar, version)
                    .where(t.c.investigation_id == iid)).first()
    if row is None or row[0] != fp:
        return None
    from msgspec.json import decode

    data = decode(row[1])  # a view of thousands of items: in C, 2-3 times json.loads's speed
    data.pop(BASIS, None)
    named = data.pop(PARTS, None)
    if named:
        p = tables.SnapshotPart
        mine = (p.c.investigation_id == iid, p.c.name != JSON_PART)
        if parts:
            kept = {name: (digest, text) for name, digest, text in s.execute(
                select(p.c.name, p.c.digest, p.c.data).where(*mine))}
        else:  # what each is named by, not its text
            kept = {name: (digest, None) for name, digest in s.execute(select(p.c.name, p.c.digest).where(*mine))}
        if any(kept.get(name, ("",))[0] != digest for name, digest in named.items()):
            return None  # a part it names is not kept as it was: no stored view
        for name in named if parts else ():
            data["model"][name] = decode(kept[name][1])
    data["others"] = row[4] or ""  # "": no evaluation has stored a version yet
    if row[2] is not None and row[2] == data["others"] and row[3] is not None:
        data["similar"] = json.loads(row[3])
    return data


def others(s: Session) -> str:
    """The evidence version: it changes with every evaluation that changed any stored evidence or status."""
    from triage.kb.evaluations import EVIDENCE_VERSION, _get_meta

    # read as a column (written so too, by store_evaluation): never an object held from before
    return _get_meta(s, EVIDENCE_VERSION) or ""


def write_similar(s: Session, iid: str, version: Optional[str], similar: list) -> None:
    """Keep "Seen elsewhere" with the stored evaluation, as of evidence version ``version``."""
    from sqlalchemy import update

    t = tables.Snapshot
    text = json.dumps(similar, ensure_ascii=False)
    if s.execute(select(t.c.others, t.c.similar).where(t.c.investigation_id == iid)).first() == (version, text):
        return  # kept already (an update writes the row again, the view's megabytes with it)
    s.execute(update(t).where(t.c.investigation_id == iid).values(others=version, similar=text))


#: The part that keeps the stored view's JSON report (:func:`triage.render.report.json_template`),
#: under the view's fingerprint: written by the view's first JSON report, and, named by no view,
#: deleted whenever a view is written (:func:`_write_parts`).
JSON_PART = "~json"


def read_json(s: Session, iid: str, fp: str) -> Optional[str]:
    """The JSON report kept with the stored view of ``iid`` derived from ``fp`` (None: none kept).
    Whether that view stands is :func:`read`'s to tell (``parts=False``), which its caller asks
    next: it is not asked twice."""
    p = tables.SnapshotPart
    return s.execute(select(p.c.data).where(p.c.investigation_id == iid, p.c.name == JSON_PART,
                                            p.c.digest == fp)).scalar()


def write_json(s: Session, iid: str, fp: str, text: str) -> None:
    """Keep ``text`` as the JSON report of the stored view of ``iid`` derived from ``fp``."""
    from sqlalchemy import delete, insert

    p = tables.SnapshotPart
    s.execute(delete(p).where(p.c.investigation_id == iid, p.c.name == JSON_PART))
    s.execute(insert(p).values(investigation_id=iid, name=JSON_PART, digest=fp, data=text))


PARTS = "parts"  # what the stored view names its parts by: name -> digest of its text
BASIS = "basis"  # what it was made of (:func:`basis`)


def write(s: Session, iid: str, fp: str, data: Any, basis: Optional[dict] = None) -> None:
    """Store ``data`` (JSON-ready) as the evaluation of ``iid`` derived from ``fp``, made of
    ``basis`` (:func:`basis`).

    The view's long lists (:data:`triage.render.model.LONG`) are kept apart, each under the
    digest of its text, and written only when that differs: after a run is added, most of a
    view of thousands of items is what it was.  A list the view holds as
    :class:`~triage.render.model.Kept` is the one stored, kept as it is."""
    from msgspec.json import encode

    model = data["model"]
    named = _write_parts(s, iid, model)
    head = {**data, "model": {k: (None if k in named else v) for k, v in model.items()}, PARTS: named}
    if basis is not None:
        head[BASIS] = basis
    # compact and non-ASCII as itself, as json.dumps(..., ensure_ascii=False, separators=(",", ":"))
    # would write it (its floats spelled its own way), in C: 4 times its speed on a view of thousands of items
    text = encode(head).decode()
    t = tables.Snapshot  # as columns: an add-run stores the view and maps no table
    mine = t.c.investigation_id == iid
    if s.execute(select(t.c.fingerprint, t.c.data).where(mine)).first() == (fp, text):
        return  # the view stored is this one (a whole evaluation of what was evaluated): kept, not written again
    from sqlalchemy import insert

    from triage.kb.db import now

    # "Seen elsewhere" is computed again for a new evaluation.  Deleted, then inserted: an
    # update that finds no row (an evaluation that changed something dropped it) would
    # still hand the driver the whole text.
    drop(s, iid)
    s.execute(insert(t).values(investigation_id=iid, fingerprint=fp, at=now(), data=text, others=None, similar=None))


def _write_parts(s: Session, iid: str, model: dict) -> dict[str, str]:
    """Keep each long list of ``model`` whose text differs from the one kept (a part is a
    row of its own, written whole or not at all), and no other; its name -> its digest."""
    from msgspec.json import encode
    from sqlalchemy import delete, insert

    from triage.render.model import LONG, Kept

    p = tables.SnapshotPart
    mine = p.c.investigation_id == iid
    kept = dict(s.execute(select(p.c.name, p.c.digest).where(mine)).all())
    named: dict[str, str] = {}
    for name in LONG:
        value = model.get(name)
        if isinstance(value, Kept):
            named[name] = kept[name]  # one kept is one there (keepable())
            continue
        if name not in model:
            continue
        text = encode(value)
        named[name] = digest = hashlib.sha256(text).hexdigest()[:32]  # as the view's basis (render.basis)
        if kept.get(name) != digest:
            if name in kept:
                s.execute(delete(p).where(mine, p.c.name == name))
            s.execute(insert(p).values(investigation_id=iid, name=name, digest=digest, data=text.decode()))
    stale = [name for name in kept if name not in named]
    if stale:
        s.execute(delete(p).where(mine, p.c.name.in_(stale)))
    return named


def kept_parts(s: Session, iid: str, model: dict) -> dict:
    """``model`` with each :class:`~triage.render.model.Kept` list read from the stored view."""
    from msgspec.json import decode

    from triage.render.model import Kept

    names = [k for k, v in model.items() if isinstance(v, Kept)]
    if not names:
        return model
    p = tables.SnapshotPart
    rows = dict(s.execute(select(p.c.name, p.c.data).where(p.c.investigation_id == iid, p.c.name.in_(names))).all())
    return {k: (decode(rows[k]) if isinstance(v, Kept) else v) for k, v in model.items()}


def basis(s: Session, iid: str, made_of: dict[str, str]) -> dict:
    """What a view of ``iid`` about to be stored is made of: the definitions, the runs in
    numbers (count, largest key, sum of write times) and what each long list is made of
    (``made_of``: :func:`triage.render.basis.digests`)."""
    return {"definitions": definitions(s), "runs": runs_now(s, iid), "made_of": made_of}


def runs_now(s: Session, iid: str) -> list[int]:
    """The runs of ``iid`` in numbers: their count, largest key and sum of write times."""
    runs = tables.ConfigRuns
    count, top, times = s.execute(select(func.sum(runs.c.count), func.max(runs.c.max_pk), func.sum(runs.c.times))
                                  .where(runs.c.investigation_id == iid)).one()
    return [int(count or 0), int(top or 0), int(times or 0)]


def keepable(s: Session, iid: str, now: dict) -> tuple[list[str], list[tuple[str, str]]]:
    """The long lists of the stored view of ``iid`` made of what the view about to be stored
    is made of (``now``: its :func:`basis`), under the same definitions, while every run
    recorded since it was stored was added (none written again, none deleted) to a config
    that had runs then; and those runs, (run id, config) each.  ``([], [])``: none can be kept."""
    from msgspec.json import decode

    t = tables.Snapshot
    text = s.execute(select(t.c.data).where(t.c.investigation_id == iid)).scalar()
    head = decode(text) if text is not None else {}
    then, named = head.get(BASIS), head.get(PARTS)
    if not then or not named or then["definitions"] != now["definitions"]:
        return [], []
    added = added_since(s, iid, then["runs"], now["runs"])
    if added is None:
        return [], []
    p = tables.SnapshotPart
    kept = dict(s.execute(select(p.c.name, p.c.digest).where(p.c.investigation_id == iid)).all())
    names = [name for name, made in now["made_of"].items()
             if then["made_of"].get(name) == made and name in named and kept.get(name) == named[name]]
    return names, added


def added_since(s: Session, iid: str, then: list[int], now: list[int]) -> Optional[list[tuple[str, str]]]:
    """The runs of ``iid`` recorded since its runs numbered ``then`` (:func:`runs_now`; ``now``
    today), (run id, config) each, if that is all that changed: the count grew by theirs,
    the sum of write times by theirs, and each is of a config whose first run is older
    (None: a run was written again or deleted, or a config is new)."""
    from triage.kb.configruns import millis

    count, _, times = now
    before, top, summed = then
    r, c = tables.Run, tables.ConfigRuns
    # by key alone (the runs recorded since, of any investigation: a few), not through the
    # investigation's index, which would go through every run of it
    rows = [row[1:] for row in s.execute(select(r.c.investigation_id, r.c.run_id, r.c.config,
                                                millis(s, r.c.updated_at)).where(r.c.pk > top))
            if row[0] == iid]
    if count != before + len(rows) or times != summed + sum(int(m) for *_, m in rows):
        return None
    configs = sorted({config for _, config, _ in rows})
    if configs:
        firsts = dict(s.execute(select(c.c.config, c.c.first_pk)
                                .where(c.c.investigation_id == iid, c.c.config.in_(configs))).all())
        if any(firsts.get(config, top + 1) > top for config in configs):
            return None
    return [(run_id, config) for run_id, config, _ in rows]


def drop(s: Session, iid: str) -> None:
    """Forget the stored evaluation of ``iid``: what it was derived from changed
    in a way its fingerprint may not show (a run replaced by an older record).  Its
    parts stay: only a stored view that names them by their digests reads them, and the
    next one written keeps those it names again as they are."""
    from sqlalchemy import delete

    t = tables.Snapshot
    s.execute(delete(t).where(t.c.investigation_id == iid))
