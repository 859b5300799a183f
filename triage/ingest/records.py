"""Run records as they travel in files: JSON Lines and CSV; read, check, write.

A record is one JSON object per line::

    {"investigation": "kimik26-disagg", "run_id": "28907609511",
     "config": "kimik26-fp8-1k1k-1p1d-aiterdecode", "status": "failed",
     "metrics": {"gsm8k": {"value": 0.879, "n": 1319}},
     "provenance": {"sha": "0aac976"}, "url": "...", "time": "2026-06-20T00:00:00",
     "note": "...", "log_excerpt": "...", "signature": null,
     "excluded": false, "excluded_reason": null,
     "updated_at": "2026-06-21T09:30:00.123456+00:00"}

Only ``run_id``, ``config`` and ``status`` are required (and ``investigation``
unless the command names one).  ``updated_at`` is when the run was last
written (``export`` gives it): an import never replaces a run with an older
record of it; a record without one counts as written now.

In CSV, one row per record under a header: the fields above, except that
``metrics`` and ``provenance`` are spread over columns that read well in a
spreadsheet: ``metric.NAME`` (the value), ``metric.NAME/n`` (its sample
count; metric names never hold ``/``) and ``prov.KEY``.  An empty cell is an
absent field; empty text is no text in the knowledge base as well, so a run
exported as CSV and imported again is the same run.  ``excluded`` is
``true`` or ``false``.
"""

from __future__ import annotations

import csv
import json
import re
from datetime import datetime
from typing import Annotated, Any, Callable, Iterable, Iterator, Literal, Mapping, NamedTuple, Optional

from triage.errors import InputError
from triage import limits
from triage import numbers as _numbers
from triage.ingest.runs import (
    _NAME, MAX_N, MAX_YEAR, MIN_YEAR, NO_SCALES, storable, check_config, check_text, normalise_metrics, parse_status,
    parse_time,
)
from triage.kb.store import RunInput
from triage.rules.language.schema import ALIASES, STATUSES

FIELDS = (
    "investigation", "run_id", "config", "status", "metrics", "provenance", "url", "time", "note",
    "log_excerpt", "signature", "signature_line", "excluded", "excluded_reason", "updated_at",
)
_FIELD_SET = frozenset(FIELDS)
# Every status word a record may give; an older one (`error`) is stored as its outcome (`infra`).
_STATUS_SET = frozenset(STATUSES)
_TEXT = ("url", "note", "log_excerpt", "signature", "signature_line", "excluded_reason", "investigation")

CSV_HEAD = ("investigation", "run_id", "config", "status")
CSV_TAIL = ("url", "time", "note", "log_excerpt", "signature", "signature_line", "excluded", "excluded_reason",
            "updated_at")
METRIC, N_SUFFIX, PROV = "metric.", "/n", "prov."


class Record(NamedTuple):
    """A checked record: every field in its stored form (None: absent)."""

    investigation: Optional[str]
    run_id: str
    config: str
    status: str
    metrics: dict
    provenance: dict
    url: Optional[str]
    time: Optional[datetime]
    note: Optional[str]
    log_excerpt: Optional[str]
    signature: Optional[str]
    signature_line: Optional[str]
    excluded: bool
    excluded_reason: Optional[str]
    updated_at: Optional[datetime] = None


_NONE = type(None)
_TYPES = {key: (str, _NONE) for key in _TEXT + ("time", "updated_at")} | {
    "run_id": (str,), "config": (str,), "status": (str,), "metrics": (dict, _NONE), "provenance": (dict, _NONE),
    "excluded": (bool, _NONE),
}
_SHAPES: set[tuple] = set()  # (keys, value types) of records that had the usual types
_STR = frozenset([str])


#: The declared scales of the metrics of the investigation a record names (None: the
#: one the command names), for a value given with its n (a percentage is on 100).
ScalesOf = Callable[[Optional[str]], Mapping[str, float]]


def check_record(rec: Any, where: str, scales: Optional[ScalesOf] = None) -> Record:
    """Check one record (a parsed JSON object) and normalise it.

    Every problem is an :class:`InputError` that starts with ``where``
    (``FILE:LINE``).  The quick path takes proportions in [0, 1]; one on
    another scale is checked against ``scales`` (every metric on 1 without it).
    """
    return quick_record(rec) or _check_slowly(rec, where, scales)


def quick_record(rec: Any) -> Optional[Record]:
    """The import's inner loop: a record of the usual shape (every field of
    its usual type, metrics as ``{name: {value: float, n: int}}``) checked
    and normalised at speed; None for any other, which
    :func:`check_record` then checks field by field to name its problem."""
    if type(rec) is not dict:
        return None
    shape = (tuple(rec), tuple(map(type, rec.values())))
    if shape not in _SHAPES:
        types = _TYPES
        for k, v in rec.items():
            t = types.get(k)
            if t is None or type(v) not in t:
                return None
        if len(_SHAPES) < 1024:
            _SHAPES.add(shape)
    get = rec.get
    status, prov, when, metrics = get("status"), get("provenance"), get("time"), get("metrics")
    if not (get("run_id") and get("config") and status in _STATUS_SET):
        return None
    if prov and ("" in prov.values() or not _STR.issuperset(map(type, prov.values()))):
        return None
    if metrics:
        for v in metrics.values():
            if type(v) is not dict:
                return None
            value, n = v.get("value"), v.get("n")
            if type(value) is not float or not -_numbers.MAGNITUDE <= value <= _numbers.MAGNITUDE or len(v) != (1 if n is None else 2) or (
                    n is not None and (type(n) is not int or not 1 <= n <= MAX_N or not 0.0 <= value <= 1.0)):
                return None
        if not _GOOD_NAMES.issuperset(metrics):
            if not all(_NAME.match(k) for k in metrics):
                return None
            if len(_GOOD_NAMES) < 4096:
                _GOOD_NAMES.update(metrics)
    written = get("updated_at")
    try:
        when = parse_time(when) if when else None
        written = parse_time(written) if written else None
    except InputError:
        return None
    if not _plain_text(rec):
        return None
    return Record(
        get("investigation") or None, rec["run_id"], rec["config"], ALIASES.get(status, status), metrics or {},
        prov or {}, get("url") or None, when, get("note") or None, get("log_excerpt") or None, get("signature") or None,
        get("signature_line") or None, get("excluded") or False, get("excluded_reason") or None, written,
    )


try:  # parsing and type checks of the usual record shape in one pass, in C
    import msgspec
except ImportError:  # pragma: no cover - a dependency; the stdlib path gives the same records
    msgspec = None

if msgspec is not None:
    _Id = Annotated[str, msgspec.Meta(min_length=1)]

    # Out of range (triage.numbers) takes the slow path, which says why.
    _Finite = Annotated[float, msgspec.Meta(ge=-_numbers.MAGNITUDE, le=_numbers.MAGNITUDE)]

    class _Metric(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
        """Encodes as the stored form, ``{"value": v}`` or ``{"value": v, "n": n}``.  A value
        with an n is a proportion: :func:`_counted_ns` sends one off [0, 1] the slow way."""

        value: _Finite
        n: Optional[Annotated[int, msgspec.Meta(ge=1, le=MAX_N)]] = None

    _Text = Optional[_Id]  # empty text takes the slow path, which makes it absent

    class _Line(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
        """A record of the usual shape, its fields in :class:`Record`'s order
        and already in stored form; any other shape fails to decode: null
        where a mapping or a flag is expected, empty text, a bare metric
        value, a time without a zone or not in RFC 3339."""

        investigation: _Text = None
        run_id: _Id
        config: _Id
        status: Literal[STATUSES]  # type: ignore[valid-type]
        metrics: dict[str, _Metric] = {}  # names of another form: see _counted_ns
        provenance: dict[str, _Id] = {}
        url: _Text = None
        time: Optional[Annotated[datetime, msgspec.Meta(tz=True)]] = None
        note: _Text = None
        log_excerpt: _Text = None
        signature: _Text = None
        signature_line: _Text = None
        excluded: bool = False
        excluded_reason: _Text = None
        updated_at: Optional[Annotated[datetime, msgspec.Meta(tz=True)]] = None

    _decode_line: Optional[Callable[[str], Any]] = msgspec.json.Decoder(_Line).decode
    _astuple = msgspec.structs.astuple
else:  # pragma: no cover
    _decode_line = None


_NUL = (b"\\u0000", b"\x00")


def quick_line(line: "bytes | str", most: Optional[int] = None) -> Optional[tuple]:
    """:func:`quick_record` straight from a JSON Lines line, with msgspec
    (parsing and checks in one pass in C): the record as a plain tuple in
    :class:`Record`'s order, or None when the line is not of the usual shape
    (or not JSON), which the caller then parses and checks the slow way for
    its message.

    Its metrics hold msgspec structs that encode as the stored form, and its
    time may be in any zone: :class:`~triage.kb.store.RunWriter` (the one
    consumer) takes both as they are.  ``most``: the text limit in force
    (``limits.get("text")``, which a caller of many lines reads once)."""
    if _decode_line is None:
        return None
    raw = line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line
    # find, not ``in``: bytes' ``in`` first tries the operand as a byte value (an int)
    # and raises and clears a TypeError for every line
    if len(raw) > (limits.get("text") if most is None else most) or raw.find(_NUL[0]) >= 0 or raw.find(_NUL[1]) >= 0:
        return None  # the slow path names the field
    try:
        rec = _astuple(_decode_line(line))
    except Exception:  # msgspec.DecodeError and ValidationError
        return None
    ns = _counted_ns(rec[4])
    if ns is None:
        return None  # the slow path says what is wrong
    if _twice(raw, rec, ns):
        return None  # msgspec keeps the last of a key given twice: the slow path refuses it
    when = rec[7]
    if when is not None and not MIN_YEAR < when.year < MAX_YEAR or not rec[1].strip() or not rec[2].strip() or (
            not rec[2].isprintable()):
        return None
    if rec[3] in ALIASES:  # an older status word: stored as its outcome
        rec = (*rec[:3], ALIASES[rec[3]], *rec[4:])
    return rec


def _counted_ns(metrics: dict) -> Optional[int]:
    """How many of the metrics have an n; None when one of them takes the slow path: a name
    of another form than :data:`~triage.ingest.runs._NAME` allows, or a value with an n (a
    proportion) off [0, 1] (the slow path checks it on the metric's scale).  A file's runs
    record a few names: each is matched once, then looked up."""
    ns = 0
    for name, m in metrics.items():
        if name not in _NAMES_SEEN:
            if not _NAME.search(name):
                return None
            if len(_NAMES_SEEN) < _NAMES_MOST:
                _NAMES_SEEN.add(name)
        if m.n is not None:
            if not 0.0 <= m.value <= 1.0:
                return None
            ns += 1
    return ns


def _twice(raw: bytes, rec: tuple, ns: int) -> bool:
    """Whether a key may stand twice in the line (then it takes the slow path, which knows);
    ``ns``: how many of its metrics have an n.

    Each key of a JSON line ends with a quote and a colon; otherwise only a string that
    starts with a colon, or an escaped quote before one inside a string, holds a
    quote-colon.  So the quote-colons a line holds are at least its keys, and its keys at
    least the distinct keys of each of its objects (the record's fields, its metrics, each
    metric's ``value`` and ``n``, its provenance): equal, no key stands twice, however it
    is spelled.  A line with whitespace before a colon (a key may be written so) is not
    counted; a line holds no newline but its last byte.

    The record's fields that are not their default were given, each a key of the line at
    least once: when that many are all the quote-colons, the line is not decoded again to
    count its keys (a field given as null or as its default is, as it may be given twice)."""
    find = raw.find  # not ``in``: see quick_line
    # a tab or a carriage return is looked for alone first (one pass in C, where a
    # two-byte pattern starting with a space goes slower): most lines hold neither
    if find(b" :") >= 0 or find(b"\t") >= 0 and find(b"\t:") >= 0 or find(b"\r") >= 0 and find(b"\r:") >= 0:
        return True  # a key written with a space before its colon has no quote-colon
    nested = len(rec[5]) + 2 * len(rec[4]) + ns  # a metric: its name, value (and n)
    quoted = raw.count(b'":')
    if quoted == _FIELDS_GIVEN - rec.count(None) - (not rec[4]) - (not rec[5]) - (rec[12] is False) + nested:
        return False
    return quoted != len(_top_keys(raw)) + nested


#: The fields of a record (:class:`Record`, :func:`quick_line`'s tuple).
_FIELDS_GIVEN = len(Record._fields)


#: Metric names seen of the usual form (:func:`_counted_ns`), at most :data:`_NAMES_MOST`.
_NAMES_SEEN: set[str] = set()
_NAMES_MOST = 10_000


_top_keys = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode if _decode_line is not None else None


def _check_slowly(rec: Any, where: str, scales: Optional[ScalesOf] = None) -> Record:
    """:func:`check_record`, one field at a time, in the order that decides
    which problem is reported first."""
    if type(rec) is not dict:
        raise InputError(f"{where}: a record must be a JSON object")
    if not _FIELD_SET.issuperset(rec):
        unknown = sorted(set(rec) - _FIELD_SET)
        raise InputError(f"{where}: unknown field(s) {', '.join(map(str, unknown))}; expected {', '.join(FIELDS)}")
    get = rec.get
    run_id, config, status = get("run_id"), get("config"), get("status")
    for key, value in (("run_id", run_id), ("config", config), ("status", status)):
        if value is None or value == "":
            raise InputError(f"{where}: missing {key}")
    if type(run_id) is not str:
        if isinstance(run_id, bool) or not isinstance(run_id, (str, int)):
            raise InputError(f"{where}: run_id must be a string or a number")
        run_id = str(run_id)
    if type(config) is not str:
        raise InputError(f"{where}: config must be a string")
    if type(status) is not str or status not in _STATUS_SET:
        try:
            status = parse_status(status)  # the message add-run gives; `error` is read as `infra`
        except InputError as e:
            raise InputError(f"{where}: {e.message}") from None
    when, written = (_check_time(get(key), key, where) for key in ("time", "updated_at"))
    prov = get("provenance") or {}
    if type(prov) is not dict:
        raise InputError(f"{where}: provenance must be a flat mapping of key to value")
    for v in prov.values():
        if type(v) is not str:
            if isinstance(v, (dict, list)):
                raise InputError(f"{where}: provenance must be a flat mapping of key to value")
            prov = {str(k): str(v) for k, v in prov.items()}
            break
    for key in _TEXT:
        v = get(key)
        if v is not None and type(v) is not str:
            raise InputError(f"{where}: {key} must be a string")
    for key, v in (("run_id", run_id), ("config", config), *((k, get(k)) for k in _TEXT),
                   *((f"provenance key {k!r}", k) for k in prov), *((f"provenance {k}", v) for k, v in prov.items())):
        check_text(f"{where}: {key}", v, required=key in ("run_id", "config"))
    check_config(f"{where}: config", config)
    excluded = get("excluded")
    if excluded is not None and type(excluded) is not bool:
        raise InputError(f"{where}: excluded must be true or false")
    metrics = get("metrics") or {}
    investigation = get("investigation") or None
    metrics = normalise_metrics(metrics, where, NO_SCALES if scales is None else scales(investigation))
    return Record(
        investigation, run_id, config, ALIASES.get(status, status), metrics,
        {k: v for k, v in prov.items() if v != ""} if "" in prov.values() else prov,
        get("url") or None, when, get("note") or None, get("log_excerpt") or None, get("signature") or None,
        get("signature_line") or None, bool(excluded), get("excluded_reason") or None, written,
    )


def _check_time(value: Any, key: str, where: str) -> Optional[datetime]:
    if value is None or value == "":
        return None
    if type(value) is not str:
        raise InputError(f"{where}: {key} must be an ISO 8601 string")
    try:
        return parse_time(value)
    except InputError as e:  # its message names the value as a time
        raise InputError(f"{where}: {e.message}" if key == "time" else f"{where}: {key}: {e.message}") from None


_GOOD_NAMES: set[str] = set()  # metric names already checked


def _plain_text(rec: dict) -> bool:
    """Whether every text of a record (of the usual types) is storable:
    no NUL, none too long (:func:`~triage.ingest.runs.check_text` says why not)."""
    if not rec["run_id"].strip() or not rec["config"].strip() or not rec["config"].isprintable():
        return False
    cap = limits.get("text")
    prov = rec.get("provenance") or {}
    for v in (*rec.values(), *prov.keys(), *prov.values()):
        if type(v) is str and ("\x00" in v or len(v) > cap or not storable(v)):
            return False
    return True


def record_to_input(rec: Any, where: str, scales: Optional[ScalesOf] = None) -> tuple[Optional[str], RunInput]:
    """Check one record and turn it into (investigation id, RunInput)."""
    r = check_record(rec, where, scales)
    return r.investigation, RunInput(
        run_id=r.run_id, config=r.config, status=r.status, metrics=r.metrics, provenance=r.provenance,
        url=r.url, time=r.time, note=r.note, log_excerpt=r.log_excerpt, signature_id=r.signature,
        signature_line=r.signature_line, excluded=r.excluded, excluded_reason=r.excluded_reason,
    )


def dumps(rec: dict) -> str:
    """A record as a line of JSON Lines (``json.dumps(rec, ensure_ascii=False)``'s text)."""
    return _encode_record(rec)


#: ``json.dumps(ensure_ascii=False)`` made once (dumps makes an encoder a call: a tenth of an export's
#: time), without the check for cycles (a record is a tree).
_encode_record = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode


# ---------------------------------------------------------------------------
# CSV


def csv_header(records: Iterable[dict]) -> list[str]:
    """The columns for these records: the fixed ones, then one per metric
    (and its ``/n`` when any record has one) and per provenance key, sorted."""
    metrics: dict[str, bool] = {}
    prov: set[str] = set()
    for rec in records:
        for name, v in rec.get("metrics", {}).items():
            metrics[name] = metrics.get(name, False) or v.get("n") is not None
        prov.update(rec.get("provenance", {}))
    cols = list(CSV_HEAD)
    for name in sorted(metrics):
        cols.append(METRIC + name)
        if metrics[name]:
            cols.append(METRIC + name + N_SUFFIX)
    cols += [PROV + k for k in sorted(prov)]
    return cols + list(CSV_TAIL)


def _csv_plan(header: list[str]) -> list[tuple[int, str, Optional[str]]]:
    """What each column of ``header`` holds, worked out once for every row: (kind, name, and
    for a sample count's column the metric it may be of)."""
    plan: list[tuple[int, str, Optional[str]]] = []
    for col in header:
        if col.startswith(METRIC):
            name = col[len(METRIC):]
            plan.append((_METRIC_CELL, name, name[: -len(N_SUFFIX)] if name.endswith(N_SUFFIX) else None))
        elif col.startswith(PROV):
            plan.append((_PROV_CELL, col[len(PROV):], None))
        else:
            plan.append((_EXCLUDED_CELL if col == "excluded" else _FIELD_CELL, col, None))
    return plan


_METRIC_CELL, _PROV_CELL, _EXCLUDED_CELL, _FIELD_CELL = range(4)


def record_to_csv(rec: dict, plan: list[tuple[int, str, Optional[str]]]) -> list[str]:
    """One record (as :func:`triage.kb.runs.run_to_record` gives it) as a CSV row, its columns
    as :func:`_csv_plan` of the header says."""
    out = []
    metrics, prov = rec.get("metrics", {}), rec.get("provenance", {})
    for kind, name, of in plan:
        if kind == _METRIC_CELL:
            if of is not None and of in metrics:  # a sample count's column
                n = metrics[of].get("n")
                out.append("" if n is None else str(n))
            else:
                v = metrics.get(name)
                out.append("" if v is None else repr(float(v["value"])))
        elif kind == _PROV_CELL:
            out.append(prov.get(name, ""))
        elif kind == _EXCLUDED_CELL:
            out.append("true" if rec.get("excluded") else "false")
        else:
            v = rec.get(name)
            out.append("" if v is None else str(v))
    return out


# OWASP's rule against formula injection: a cell that a spreadsheet would read
# as a formula (= + - @, or a tab or CR first) gets a leading "'"; so does one
# that already starts with quotes before such a character, so that reading
# takes exactly one quote off and every text comes back unchanged.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _formula_like(cell: str) -> bool:
    return cell.lstrip("'").startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(cell)


def escape_cell(cell: str) -> str:
    """A cell as written: ``'`` before one a spreadsheet would run as a formula."""
    if not cell or cell[0] not in _MAY_ESCAPE:  # most cells: looked at no further
        return cell
    return "'" + cell if _formula_like(cell) else cell


#: The first characters of a cell that may need a quote: a formula's, or quotes before one.
_MAY_ESCAPE = frozenset("'" + "".join(_FORMULA_START))


def unescape_cell(cell: str) -> str:
    """The inverse of :func:`escape_cell`."""
    return cell[1:] if cell.startswith("'") and _formula_like(cell[1:]) else cell


def _field_limit() -> int:
    """The longest cell read: any text the knowledge base accepts, escaped."""
    return limits.get("text") + 16


class _LineFeeds:
    def __init__(self, out: Any) -> None:
        self.out = out

    def write(self, row: str) -> Any:
        return self.out.write(row[:-2] + "\n" if row.endswith("\r\n") else row)


def write_csv(records: Iterable[dict], out: Any, header: Optional[list[str]] = None) -> None:
    """Write records as CSV (header first) to a text stream, formula-like
    cells escaped (:func:`escape_cell`); ``header``: their :func:`csv_header`,
    worked out already (the records may then be read once, as they come)."""
    if header is None:
        records = list(records)
        header = csv_header(records)
    # With "\r\n" as its line end the writer quotes a cell holding a lone CR
    # (with "\n" it would not, and that cell would not read back); each row's
    # own line end is then written as "\n".
    w = csv.writer(_LineFeeds(out), lineterminator="\r\n")
    w.writerow(header)
    plan = _csv_plan(header)
    for rec in records:
        w.writerow([escape_cell(c) for c in record_to_csv(rec, plan)])


def read_csv(lines: Iterable[str], path: str) -> Iterator[tuple[int, dict]]:
    """``(line number, record)`` for each CSV row: the number of the row's
    first line (a cell may hold several)."""
    csv.field_size_limit(max(csv.field_size_limit(), _field_limit()))
    reader = csv.reader(lines, strict=True)
    try:
        header = next(reader, None)
    except csv.Error as e:
        raise InputError(f"{path}:1: not valid CSV ({e})") from None
    if header is None:
        return
    _check_header(header, f"{path}:1")
    start = reader.line_num + 1
    try:
        for row in reader:
            lineno, start = start, reader.line_num + 1
            if not any(row):
                continue
            where = f"{path}:{lineno}"
            if len(row) != len(header):
                raise InputError(f"{where}: {len(row)} cells, the header has {len(header)}")
            yield lineno, _csv_record(header, row, where)
    except csv.Error as e:
        raise InputError(f"{path}:{start}: not valid CSV ({e})") from None


def _check_header(header: list[str], where: str) -> None:
    known = set(CSV_HEAD) | set(CSV_TAIL)
    bad = [c for c in header if c not in known and not (c.startswith(METRIC) and len(c) > len(METRIC))
           and not (c.startswith(PROV) and len(c) > len(PROV))]
    if bad:
        raise InputError(f"{where}: unknown column(s) {', '.join(bad)}; expected {', '.join(CSV_HEAD + CSV_TAIL)}, "
                         "metric.NAME, metric.NAME/n or prov.KEY")
    dup = sorted({c for c in header if header.count(c) > 1})
    if dup:
        raise InputError(f"{where}: column(s) given twice: {', '.join(dup)}")


def _csv_record(header: list[str], row: list[str], where: str) -> dict:
    rec: dict[str, Any] = {}
    metrics: dict[str, dict] = {}
    counts: dict[str, str] = {}
    prov: dict[str, str] = {}
    for col, cell in zip(header, row):
        if cell == "":
            continue
        cell = unescape_cell(cell)
        if col.startswith(METRIC):
            name = col[len(METRIC):]
            if name.endswith(N_SUFFIX):
                counts[name[: -len(N_SUFFIX)]] = cell
                continue
            try:
                metrics[name] = {"value": float(cell)}
            except ValueError:
                raise InputError(f"{where}: {col}: {cell!r} is not a number") from None
        elif col.startswith(PROV):
            prov[col[len(PROV):]] = cell
        elif col == "excluded":
            flag = cell.strip().lower()
            if flag not in ("true", "false"):
                raise InputError(f"{where}: excluded: {cell!r}: expected true or false")
            rec["excluded"] = flag == "true"
        else:
            rec[col] = cell
    for name, cell in counts.items():
        if name not in metrics:
            raise InputError(f"{where}: {METRIC}{name}{N_SUFFIX} is given but {METRIC}{name} is empty")
        if not cell.strip().isdigit():
            raise InputError(f"{where}: {METRIC}{name}{N_SUFFIX}: {cell!r} is not a whole number")
        metrics[name]["n"] = int(cell)
    if metrics:
        rec["metrics"] = metrics
    if prov:
        rec["provenance"] = prov
    return rec
