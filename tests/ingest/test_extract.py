"""Tests for triage.ingest.logs (reading plain, gzip and standard-input logs)
and triage.ingest.extract (metrics, status and provenance from log lines)."""

from __future__ import annotations

import gzip
import io
import sys
from pathlib import Path

import pytest

from triage.errors import InputError
from triage.ingest.extract import (
    DEFAULT_EXTRACTORS,
    Extracted,
    Extractor,
    compile_extractors,
    extract,
)
from triage.ingest.logs import blocks, iter_chunks, open_log

# ---------------------------------------------------------------------------
# reading logs


def _write(path: Path, text: str, packed: bool = False) -> Path:
    data = text.encode("utf-8")
    path.write_bytes(gzip.compress(data) if packed else data)
    return path


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("name", ["run.log", "run.log.gz", "noext"])
def test_open_log_plain_or_gzip_by_magic_bytes(tmp_path: Path, packed: bool, name: str) -> None:
    path = _write(tmp_path / name, "first\r\nsecond\n\nfourth ünïcode\n", packed)
    with open_log(str(path)) as log:
        assert list(log) == ["first", "second", "", "fourth ünïcode"]


def test_open_log_edges(tmp_path: Path) -> None:
    cases = {
        "": [],
        "\n": [""],
        "no newline at the end": ["no newline at the end"],
        "a\rb\n": ["a\rb"],  # a lone CR (progress bar) stays in the line
        "bad \xff byte\n": None,
    }
    for i, (text, lines) in enumerate(cases.items()):
        path = tmp_path / f"edge{i}.log"
        if lines is None:
            path.write_bytes(b"bad \xff byte\n")
            lines = ["bad \ufffd byte"]
        else:
            path.write_text(text, newline="")
        with open_log(str(path)) as log:
            assert list(log) == lines, text


def test_open_log_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as e:
        open_log(str(tmp_path / "nope.log"))
    assert str(e.value) == f"{tmp_path / 'nope.log'}: no such log file"
    assert e.value.exit_code == 2
    with pytest.raises(InputError, match="is a directory"):
        open_log(str(tmp_path))
    with pytest.raises(InputError, match="no such log file"):
        iter_chunks(str(tmp_path / "nope.log"))  # raised at once, not on first next()


def test_open_log_truncated_gzip(tmp_path: Path) -> None:
    path = tmp_path / "cut.gz"
    path.write_bytes(gzip.compress(b"line\n" * 1000)[:-20])
    with pytest.raises(InputError, match="cannot read log file"):
        with open_log(str(path)) as log:
            list(log)


class _Stdin:
    def __init__(self, data: bytes, peekable: bool) -> None:
        self.buffer = io.BufferedReader(io.BytesIO(data)) if peekable else io.BytesIO(data)


@pytest.mark.parametrize("peekable", [True, False])
@pytest.mark.parametrize("packed", [False, True])
def test_open_log_stdin(monkeypatch: pytest.MonkeyPatch, packed: bool, peekable: bool) -> None:
    data = "Accuracy: 0.878\nsecond\n".encode()
    monkeypatch.setattr(sys, "stdin", _Stdin(gzip.compress(data) if packed else data, peekable))
    with open_log("-") as log:
        assert list(log) == ["Accuracy: 0.878", "second"]
    assert not sys.stdin.buffer.closed  # standard input is not ours to close


def test_context_manager_closes_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "x.log", "a\nb\n")
    with open_log(str(path)) as log:
        assert next(log) == "a"
        raw = log._owned
    assert raw.closed


def test_chunks_hold_whole_lines_and_number_them(tmp_path: Path) -> None:
    lines = [f"line {i} " + "x" * (i % 37) for i in range(3000)]
    lines[1500] = "y" * 5000  # a line longer than the block
    path = _write(tmp_path / "many.log", "\n".join(lines) + "\n", packed=True)
    seen: list[str] = []
    firsts = []
    for first, block in iter_chunks(str(path), size=1024):
        assert first == len(seen) + 1
        firsts.append(first)
        seen.extend(block.split("\n"))
    assert seen == lines
    assert len(firsts) > 10


def test_blocks_of_any_source() -> None:
    got = [(b.first, b.lines()) for b in blocks("a\r\nb\nc\n")]
    assert got == [(1, ["a", "b", "c"])]
    got = [(b.first, b.lines()) for b in blocks(["a\n", "b\r\n", "c"])]
    assert got == [(1, ["a", "b", "c"])]
    assert list(blocks("")) == []


# ---------------------------------------------------------------------------
# extractors

GSM8K = Extractor("gsm8k-accuracy", r"^\[gsm8k\] accuracy=(?P<value>[0-9.]+)", "metric", name="gsm8k", n=1319)
ACCURACY_LINE = Extractor("accuracy-line", r"^Accuracy: (?P<value>[0-9.]+)", "metric", name="gsm8k", n=1319)


def test_default_extractor_reads_the_seed_lines() -> None:
    assert extract(["Accuracy: 0.878"], DEFAULT_EXTRACTORS).metrics == {"accuracy": (0.878, None)}
    assert extract(["Final ACCURACY = 0.5."], DEFAULT_EXTRACTORS).metrics == {"accuracy": (0.5, None)}
    got = extract(["[gsm8k] accuracy=0.878 threshold=0.92"], DEFAULT_EXTRACTORS)
    assert got.metrics == {"accuracy": (0.878, None)}  # not the threshold
    assert got.found == [(1, "accuracy", "accuracy=0.878")]
    assert extract(["val_accuracy: 0.5", "accuracy_top5=0.9", "inaccuracy: 3"], DEFAULT_EXTRACTORS).metrics == {}


def test_investigation_extractors_on_a_ci_log() -> None:
    log = [
        "2026-06-26T12:00:00.1234567Z Starting",
        "2026-06-26T12:00:01.1234567Z \x1b[32m[gsm8k] accuracy=0.878 threshold=0.92\x1b[0m",
        "2026-06-26T12:00:02.1234567Z Accuracy: 0.512",
    ]
    got = extract(log, [GSM8K, ACCURACY_LINE])
    assert got == Extracted(
        metrics={"gsm8k": (0.878, 1319)},  # declared first wins
        status=None,
        provenance={},
        found=[(2, "gsm8k-accuracy", "[gsm8k] accuracy=0.878"), (3, "accuracy-line", "Accuracy: 0.512")],
    )
    assert extract(log, [ACCURACY_LINE, GSM8K]).metrics == {"gsm8k": (0.512, 1319)}


def test_first_and_last_pick() -> None:
    log = ["Accuracy: 0.1", "noise", "Accuracy: 0.2", "Accuracy: 0.3", "end"]
    last = Extractor("acc", r"^Accuracy: (?P<value>[0-9.]+)", "metric", name="acc")
    first = Extractor("acc", r"^Accuracy: (?P<value>[0-9.]+)", "metric", name="acc", pick="first")
    assert extract(log, [last]).metrics == {"acc": (0.3, None)}
    assert extract(log, [last]).found == [(4, "acc", "Accuracy: 0.3")]
    assert extract(log, [first]).metrics == {"acc": (0.1, None)}
    assert extract(log, [first]).found == [(1, "acc", "Accuracy: 0.1")]


def test_n_group_and_default_n() -> None:
    ex = Extractor("mmlu", r"mmlu acc=(?P<value>[0-9.]+)(?: n=(?P<n>[\d,]+))?", "metric", name="mmlu", n=100)
    assert extract(["mmlu acc=0.7 n=14,042"], [ex]).metrics == {"mmlu": (0.7, 14042)}
    assert extract(["mmlu acc=0.7"], [ex]).metrics == {"mmlu": (0.7, 100)}
    bare = Extractor("mmlu", r"mmlu acc=(?P<value>[0-9.]+) n=(?P<n>\d+)", "metric", name="mmlu")
    assert extract(["mmlu acc=0.7 n=57"], [bare]).metrics == {"mmlu": (0.7, 57)}


def test_values_that_are_not_numbers_do_not_count() -> None:
    ex = Extractor("lat", r"latency=(?P<value>\S+)", "metric", name="latency")
    assert extract(["latency=12.5", "latency=nan", "latency=n/a"], [ex]).metrics == {"latency": (12.5, None)}
    assert extract(["latency=1,234.5"], [ex]).metrics == {"latency": (1234.5, None)}
    assert extract(["latency=oops"], [ex]).metrics == {}


def test_status_map_and_status_name() -> None:
    result = Extractor(
        "result", r"^=+ \d+ (?P<value>passed|failed|PASSED|Failed)\b", "status",
        status_map={"passed": "passed", "failed": "failed"},
    )  # fmt: skip
    crash = Extractor("crash", r"Fatal Python error: Aborted", "status", name="crashed")
    assert extract(["==== 3 passed in 1.2s ===="], [result]).status == "passed"
    assert extract(["==== 1 Failed, 2 passed ===="], [result]).status == "failed"  # the map ignores case
    assert extract(["==== 1 skipped ===="], [result]).status is None
    log = ["Fatal Python error: Aborted", "==== 1 failed ===="]
    assert extract(log, [crash, result]).status == "crashed"  # declared first wins
    assert extract(log, [result, crash]).status == "failed"
    assert [f[1] for f in extract(log, [result, crash]).found] == ["crash", "result"]  # in log order


def test_provenance() -> None:
    ex = [
        Extractor("image", r"image: (?P<value>\S+)", "provenance", name="image", pick="first"),
        Extractor("sha", r"HEAD is now at (?P<value>[0-9a-f]{7,})", "provenance", name="sha"),
    ]
    log = ["image: rocm/sgl-dev:v0.5.14", "HEAD is now at 0aac976 fix", "image: other"]
    got = extract(log, ex)
    assert got.provenance == {"image": "rocm/sgl-dev:v0.5.14", "sha": "0aac976"}
    assert got.metrics == {} and got.status is None


def test_extract_reads_files_gzip_and_strings_alike(tmp_path: Path) -> None:
    lines = [f"2026-06-26T12:00:{i % 60:02d}.0000000Z step {i}" for i in range(4000)]
    lines[10] = "2026-06-26T12:00:10.0000000Z [gsm8k] accuracy=0.801 threshold=0.92"
    lines[3990] = "2026-06-26T12:00:30.0000000Z Accuracy: 0.879"
    text = "\n".join(lines) + "\n"
    expected = extract(lines, [GSM8K, ACCURACY_LINE, *DEFAULT_EXTRACTORS])
    assert expected.found == [
        (11, "gsm8k-accuracy", "[gsm8k] accuracy=0.801"),
        (3991, "accuracy-line", "Accuracy: 0.879"),
        (3991, "accuracy", "Accuracy: 0.879"),
    ]
    assert expected.metrics == {"gsm8k": (0.801, 1319), "accuracy": (0.879, None)}
    assert extract(text, [GSM8K, ACCURACY_LINE, *DEFAULT_EXTRACTORS]) == expected
    path = _write(tmp_path / "run.log", text, packed=True)
    with open_log(str(path), size=2048) as log:
        assert extract(log, [GSM8K, ACCURACY_LINE, *DEFAULT_EXTRACTORS]) == expected


def test_no_extractors() -> None:
    assert extract(["Accuracy: 1"], []) == Extracted()


@pytest.mark.parametrize(
    "ex, message",
    [
        (Extractor("a", r"(?P<value>\d+", "metric", name="m"), "extractor a: bad pattern"),
        (Extractor("a", r"\d+", "metric", name="m"), "extractor a: the pattern needs a named group (?P<value>...)"),
        (Extractor("a", r"(?P<value>\d+)", "metric"), "extractor a: a metric extractor needs a name"),
        (Extractor("a", r"(?P<value>\d+)", "gauge", name="m"), "extractor a: kind must be one of metric, status, provenance"),
        (Extractor("a", r"(?P<value>\d+)", "metric", name="m", pick="middle"), "extractor a: pick must be first or last"),
        (Extractor("a", r"x", "status"), "extractor a: a status extractor needs a status name or a status_map"),
        (Extractor("a", r"x", "status", status_map={"x": "failed"}), "extractor a: a status_map needs a named group"),
        (Extractor("a", r"(?P<value>x)", "status", name="s", status_map={"x": "f"}), "extractor a: give a status name or a status_map, not both"),
        (Extractor("a", r"(?P<value>x)", "provenance", name="p", n=3), "extractor a: n is a sample count"),
        (Extractor("a", r"(?P<value>x)", "metric", name="m", n=0), "extractor a: n is a sample count"),
        (Extractor("", r"(?P<value>x)", "metric", name="m"), "extractor #1: needs an id"),
        (Extractor("a", r"acc=(?P<value>\d+)(?!\d)", "metric", name="m"),
         "extractor a: bad pattern: a look-ahead (?!...) needs backtracking, which triage does not run"),
        (Extractor("a", r"(?P<value>\d)\1", "metric", name="m"),
         "extractor a: bad pattern: a back-reference needs backtracking"),
    ],
)
def test_bad_extractors_are_refused(ex: Extractor, message: str) -> None:
    with pytest.raises(InputError) as e:
        compile_extractors([ex])
    assert str(e.value).startswith(message)
    assert e.value.exit_code == 2


def test_compiled_extractors_can_be_reused() -> None:
    compiled = compile_extractors([ACCURACY_LINE])
    assert compile_extractors(compiled) == compiled
    assert extract(["Accuracy: 0.5"], compiled).metrics == {"gsm8k": (0.5, 1319)}


def test_a_user_extractor_runs_in_linear_time() -> None:
    # Python's re takes over 100 s on this line (catastrophic backtracking)
    import time

    ex = Extractor("slow", r"^(a|aa)+(?P<value>[0-9])$", "metric", name="m")
    start = time.perf_counter()
    got = extract(["a" * 44 + "x", "a" * 43 + "7", "a" * 5000 + "!"], [ex])
    assert time.perf_counter() - start < 1.0
    assert got.metrics == {"m": (7.0, None)}


def test_a_line_longer_than_the_limit_is_cut_and_counted(limits_from, tmp_path: Path) -> None:
    limits_from(TRIAGE_MAX_LOG_LINE="4096")
    for packed in (False, True):
        path = _write(tmp_path / "long.log", "a\n" + "x" * 50_000 + "\nacc=0.5\n" + "y" * 9000, packed=packed)
        with open_log(str(path), size=1024) as log:
            lines = list(log)
            assert log.lines_cut == 2
        assert lines == ["a", "x" * 4096, "acc=0.5", "y" * 4096]


def test_a_gzip_bomb_is_refused(limits_from, tmp_path: Path) -> None:
    path = tmp_path / "bomb.log.gz"
    path.write_bytes(gzip.compress(b"a" * (80 << 20), compresslevel=9))  # a letter: zeros are not text
    with open_log(str(path)) as log, pytest.raises(InputError) as e:
        for _ in log:
            pass
    assert str(e.value) == (f"{path}: the gzip data expands more than 200 times (a decompression bomb?); "
                            "TRIAGE_MAX_GZIP_RATIO raises the limit")
    limits_from(TRIAGE_MAX_GZIP_RATIO="1000000")
    with open_log(str(path)) as log:
        assert sum(len(line) for line in log) == 8 << 20  # one line, cut at 8 MiB
        assert log.lines_cut == 1


def test_a_log_past_the_size_limit_is_refused(limits_from, tmp_path: Path) -> None:
    limits_from(TRIAGE_MAX_LOG_BYTES="100000")
    path = _write(tmp_path / "big.log", "error: x\n" * 20_000)
    with open_log(str(path)) as log, pytest.raises(InputError) as e:
        list(log)
    assert "the log holds more than 100,000 bytes; TRIAGE_MAX_LOG_BYTES raises the limit" in str(e.value)
