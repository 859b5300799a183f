"""Tests for the signatures of triage.ingest: normalisation (normalise),
matching and the prefilter (matcher, anchors), unknown-failure candidates
(scan) and drafts (draft)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from triage.errors import InputError
from triage.ingest.logs import open_log
from triage.ingest.draft import draft, guess_class
from triage.ingest.matcher import HAVE_RE2, Match, Matcher, SignatureSpec
from triage.ingest.normalise import normalise
from triage.ingest.scan import candidates

ENGINES = ["re"] + (["re2"] if HAVE_RE2 else [])

# The seed's real lines.
KIMI = "ValueError: 'KimiK25ForConditionalGeneration' is not a registered model"
DEEPSEEK = "[2026-07-01 03:14:15 TP3] ValueError: 'DeepseekV4ForCausalLM' is not a registered model"
ABORT = "Fatal Python error: Aborted"
SIGABRT = "Process exited with signal SIGABRT (-6)"
BLOB = (
    "azure.core.exceptions.ResourceNotFoundError: The specified blob does not exist. "
    "ErrorCode:BlobNotFound"
)

SIGNATURES = [
    SignatureSpec("unregistered-model", KIMI, "setup-error", "model class missing", "rebase"),
    SignatureSpec(
        "init-abort",
        r"(SIGABRT|[Ss]ignal 6\b|exit(ed)? with (code|status) -6|Fatal Python error: Aborted)",
        "crash",
        regex=True,
    ),
    SignatureSpec("blob-not-found", "The specified blob does not exist. ErrorCode:BlobNotFound", "infra"),
    SignatureSpec("cuda-oom", "torch.OutOfMemoryError: CUDA out of memory.", "oom"),
]


@pytest.fixture(params=ENGINES)
def matcher(request) -> Matcher:
    return Matcher(SIGNATURES, engine=request.param)


# ---------------------------------------------------------------------------
# normalise


@pytest.mark.parametrize(
    "line, expected",
    [
        # ANSI colour codes, whitespace, case
        ("\x1b[1;31mERROR\x1b[0m   Boom  \t happened", "error boom happened"),
        # leading timestamps and log prefixes
        ("2026-06-26T12:34:56.789Z Something broke", "something broke"),
        ("2026-06-26T12:34:56.1234567Z ##[error]Process completed with exit code 1.", "process completed with exit code <num>."),
        ("[12:34:56] worker crashed", "worker crashed"),
        ("[2026-07-01 03:14:15 TP3] Scheduler hit an exception", "scheduler hit an exception"),
        ("[rank0]:[W611 12:00:01.123] ProcessGroupNCCL timeout", "processgroupnccl timeout"),
        ("[gsm8k] accuracy=0.878 threshold=0.92", "[gsm8k] accuracy=<num> threshold=<num>"),
        # timestamps elsewhere
        ("took from 2026-06-26 12:00:00 to 12:05:01.5", "took from <ts> to <ts>"),
        # UUIDs, hex, SHAs, addresses
        ("request 123e4567-e89b-12d3-a456-426614174000 failed", "request <uuid> failed"),
        ("segfault at 0x7ffd1234abcd in libfoo", "segfault at <hex> in libfoo"),
        ("commit 9fceb02d0ae598e95dc970b74767f19372d61af8 is bad", "commit <hex> is bad"),
        ("object at 7f3a2b1c4d50 freed", "object at <hex> freed"),
        ("deadbeef and 12345678 are no hex", "deadbeef and <num> are no hex"),
        # IPs and ports
        ("connect to 10.0.0.12:29500 failed", "connect to <ip> failed"),
        ("POST http://127.0.0.1:30000/generate", "post http://<ip>/generate"),
        # paths: directories masked, basename kept
        (
            'File "/usr/lib/python3.11/site-packages/sglang/srt/models/registry.py", line 77, in resolve',
            'file "<path>/registry.py", line <num>, in resolve',
        ),
        ("open sglang/srt/layers/moe.py failed", "open <path>/moe.py failed"),
        (r"C:\Users\ci\work\build.log missing", r"<path>\build.log missing"),
        ("gen throughput (token/s): 12.5", "gen throughput (token/s): <num>"),
        # numbers: ints, floats, signs, exponents; digits glued to letters stay
        ("loss 0.5 step 1200 lr 1e-5 delta -6", "loss <num> step <num> lr <num> delta <num>"),
        ("gsm8k on python3.11 with KimiK25", "gsm8k on python3.11 with kimik25"),
        # ranks and worker ids
        ("rank 3 failed", "<rank> failed"),
        ("error on rank 3, tp_rank=2, DP1, worker-7, cuda:0, GPU 3", "error on <rank>, <rank>, <rank>, <rank>, <rank>, <rank>"),
        ("step 3 of 10", "step <num> of <num>"),
        # quoted names are kept
        (KIMI, "valueerror: 'kimik25forconditionalgeneration' is not a registered model"),
        (DEEPSEEK, "valueerror: 'deepseekv4forcausallm' is not a registered model"),
        # syslog prefix
        ("Jul  1 03:14:15 host kernel: Out of memory", "host kernel: out of memory"),
    ],
)
def test_normalise_masks(line: str, expected: str) -> None:
    assert normalise(line) == expected
    assert normalise(expected) == expected  # idempotent


# ---------------------------------------------------------------------------
# matching the seed's lines


def test_original_line_matches_exactly(matcher: Matcher) -> None:
    m = matcher.match_line("2026-06-26T12:34:56.1234567Z [2026-06-26 12:34:56 TP0] " + KIMI)
    assert m is not None
    assert (m.signature_id, m.how, m.score, m.line_no) == ("unregistered-model", "exact", 100.0, 0)


def test_other_model_other_rank_and_time_gets_the_same_signature(matcher: Matcher) -> None:
    m = matcher.match_line(DEEPSEEK)
    assert m is not None
    assert m.signature_id == "unregistered-model"
    assert m.how == "fuzzy"
    assert 88.0 <= m.score < 100.0


@pytest.mark.parametrize("line", [ABORT, SIGABRT, "Scheduler process 1234 exited with code -6"])
def test_crash_lines_match_the_regex_signature(matcher: Matcher, line: str) -> None:
    m = matcher.match_line(line)
    assert m is not None
    assert (m.signature_id, m.how, m.score) == ("init-abort", "regex", 100.0)


def test_blob_not_found(matcher: Matcher) -> None:
    m = matcher.match_line(BLOB)
    assert m is not None and (m.signature_id, m.how) == ("blob-not-found", "exact")


def test_oom_with_numbers_inside_a_longer_line(matcher: Matcher) -> None:
    m = matcher.match_line("[TP7] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 7 has 79 GiB")
    assert m is not None and (m.signature_id, m.how) == ("cuda-oom", "exact")


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: 'foo' is not a valid choice",
        "Error",  # short line inside a long signature: no partial credit
        "registered model loaded",
        "INFO: server started",
        "",
    ],
)
def test_other_lines_do_not_match(matcher: Matcher, line: str) -> None:
    assert matcher.match_line(line) is None


def test_quoted_value_that_is_the_whole_message_still_counts(matcher: Matcher) -> None:
    m = Matcher([SignatureSpec("keyerror-foo", "KeyError: 'foo'", "known-bug")], engine=matcher.engine)
    assert m.match_line("KeyError: 'bar'") is None
    assert m.match_line("  raise KeyError: 'foo'").how == "exact"


def test_exact_beats_fuzzy_and_longer_beats_shorter() -> None:
    sigs = [
        SignatureSpec("aborted", "Aborted", "crash"),
        SignatureSpec("fatal-aborted", "Fatal Python error: Aborted", "crash"),
        SignatureSpec("kimi", KIMI, "setup-error"),
        SignatureSpec("deepseek", "ValueError: 'DeepseekV4ForCausalLM' is not a registered model", "setup-error"),
    ]
    m = Matcher(sigs)
    assert m.match_line(ABORT).signature_id == "fatal-aborted"
    assert m.match_line("Aborted (core dumped)").signature_id == "aborted"
    # the exact DeepSeek signature wins over the fuzzy Kimi one, and back
    assert (m.match_line(DEEPSEEK).signature_id, m.match_line(DEEPSEEK).how) == ("deepseek", "exact")
    assert m.match_line(KIMI).signature_id == "kimi"


def test_first_declared_wins_a_tie() -> None:
    sigs = [SignatureSpec("one", "disk quota exceeded", "infra"), SignatureSpec("two", "Disk  QUOTA exceeded", "infra")]
    assert Matcher(sigs).match_line("write: disk quota exceeded").signature_id == "one"
    assert Matcher(sigs[::-1]).match_line("write: disk quota exceeded").signature_id == "two"


# ---------------------------------------------------------------------------
# scan, first, the prefilter


LOG = [
    "2026-06-26T12:00:00.0000001Z Starting server",
    "2026-06-26T12:00:01.0000001Z [2026-06-26 12:00:01 TP0] " + KIMI,
    "2026-06-26T12:00:02.0000001Z loading weights 45%",
    "2026-06-26T12:00:03.0000001Z " + DEEPSEEK,
    "2026-06-26T12:00:04.0000001Z " + ABORT,
    "2026-06-26T12:00:05.0000001Z RuntimeError: something else entirely",
    "2026-06-26T12:00:06.0000001Z " + BLOB,
]
EXPECTED = [(2, "unregistered-model", "exact"), (4, "unregistered-model", "fuzzy"), (5, "init-abort", "regex"), (7, "blob-not-found", "exact")]


def _summary(matches) -> list[tuple[int, str, str]]:
    return [(m.line_no, m.signature_id, m.how) for m in matches]


def test_scan_a_list_of_lines(matcher: Matcher) -> None:
    found = list(matcher.scan(LOG))
    assert _summary(found) == EXPECTED
    assert all(isinstance(m, Match) for m in found)
    assert found[0].line == LOG[1]


def test_scan_a_file_a_gzip_and_a_string_agree(matcher: Matcher, tmp_path: Path) -> None:
    text = "\r\n".join(LOG) + "\r\n"  # CRLF too
    plain = tmp_path / "run.log"
    plain.write_bytes(text.encode())
    packed = tmp_path / "run.txt"  # gzip recognised by content, not name
    packed.write_bytes(gzip.compress(text.encode()))
    for path in (plain, packed):
        with open_log(str(path)) as log:
            found = list(matcher.scan(log))
        assert _summary(found) == EXPECTED
        assert found[-1].line == LOG[-1]  # no trailing CR
    assert _summary(matcher.scan(text)) == EXPECTED
    assert _summary(matcher.scan(line + "\n" for line in LOG)) == EXPECTED


def test_scan_line_numbers_across_blocks(matcher: Matcher, tmp_path: Path) -> None:
    lines = [f"ordinary line {i} with some padding text to fill the block" for i in range(5000)]
    lines[1234] = KIMI
    lines[4321] = BLOB
    lines[4999] = SIGABRT
    path = tmp_path / "big.log"
    path.write_text("\n".join(lines))  # no final newline
    with open_log(str(path), size=4096) as log:
        assert _summary(matcher.scan(log)) == [
            (1235, "unregistered-model", "exact"),
            (4322, "blob-not-found", "exact"),
            (5000, "init-abort", "regex"),
        ]


def test_first_stops_reading(matcher: Matcher) -> None:
    def endless():
        yield "nothing here"
        yield BLOB
        n = 0
        while True:  # a log that never ends: first() must still return
            n += 1
            yield f"line {n}"

    m = matcher.first(endless())
    assert m is not None and (m.line_no, m.signature_id) == (2, "blob-not-found")
    assert matcher.first(["nothing", "here"]) is None


def test_anchor_words() -> None:
    anchors = Matcher(SIGNATURES).anchors()
    # common words (valueerror, model, error) are passed over for specific ones
    assert anchors["unregistered-model"] == ("registered",)
    assert anchors["blob-not-found"] == ("blobnotfound", "errorcode")
    assert "init-abort" not in anchors  # regex signatures have none


def test_prefilter_passes_only_lines_with_an_anchor_or_a_regex_hit(matcher: Matcher) -> None:
    assert [n for n, _ in matcher.prefilter(LOG)] == [2, 4, 5, 7]


def test_prefilter_trade_off_a_changed_anchor_word_is_missed(matcher: Matcher) -> None:
    # Fuzzy-close (the score would pass) but the anchor word "registered" is
    # misspelt, so the line is never looked at: the documented trade-off.
    line = "ValueError: 'KimiK25ForConditionalGeneration' is not a registred model"
    assert matcher.match_line(line) is None


def test_regex_signature_that_needs_backtracking_is_refused() -> None:
    sigs = [SignatureSpec("late-abort", r"(?<!test_)abort\(\) called", "crash", regex=True)]
    for engine in ENGINES:
        with pytest.raises(InputError) as e:
            Matcher(sigs, engine=engine)
        assert str(e.value) == ("signature late-abort: bad regex: a look-behind (?<!...) needs backtracking, "
                                "which triage does not run; write the pattern without it")


@pytest.mark.parametrize("engine", ENGINES)
def test_regex_signature_runs_in_linear_time(engine: str) -> None:
    # (a|aa)+b backtracks exponentially in Python's re: 37 s on 40 characters
    import time

    m = Matcher([SignatureSpec("slow", "(a|aa)+b|zzz", "crash", regex=True)], engine=engine)
    start = time.perf_counter()
    assert list(m.scan(["a" * 40 + "c", "zzz", "a" * 5000])) [0].line_no == 2
    assert m.match_line("a" * 60) is None
    assert time.perf_counter() - start < 1.0


def test_regex_signature_anchored_at_line_start() -> None:
    sigs = [SignatureSpec("killed", r"^Killed$", "oom", regex=True)]
    for engine in ENGINES:
        m = Matcher(sigs, engine=engine)
        assert _summary(m.scan(["Killed", "was Killed", "Killed", "Killed later"])) == [
            (1, "killed", "regex"),
            (3, "killed", "regex"),
        ]


def test_no_signatures_match_nothing() -> None:
    assert list(Matcher([]).scan(LOG)) == []


@pytest.mark.parametrize(
    "spec, message",
    [
        (SignatureSpec("bad", "([unclosed", "crash", regex=True), "signature bad: bad regex"),
        (SignatureSpec("empty", "x*", "crash", regex=True), "signature empty: the regex matches an empty line"),
        (SignatureSpec("noword", "12:00:01 0x1f", "crash"), "signature noword: the text has no word to search for"),
    ],
)
def test_bad_signatures_are_refused(spec: SignatureSpec, message: str) -> None:
    with pytest.raises(InputError) as e:
        Matcher([spec])
    assert str(e.value).startswith(message)
    assert e.value.exit_code == 2


# ---------------------------------------------------------------------------
# candidates and drafts


def test_candidates_are_unmatched_error_lines_deduplicated(matcher: Matcher) -> None:
    log = [
        "INFO server started",  # not an error
        "2026-06-26T12:00:01Z RuntimeError: NCCL communicator 7 was aborted on rank 3",
        "2026-06-26T12:00:02Z " + ABORT,  # matches a signature
        "2026-06-26T12:09:09Z RuntimeError: NCCL communicator 9 was aborted on rank 5",  # same once normalised
        "Traceback (most recent call last):",
        "  File \"/x/y/z.py\", line 3, in main",  # no error word
        BLOB,  # matches a signature
        "TimeoutError: no response after 600 seconds",
        "test_x FAILED",
    ]
    assert candidates(log, matcher) == [
        (2, log[1]),
        (5, "Traceback (most recent call last):"),
        (8, "TimeoutError: no response after 600 seconds"),
        (9, "test_x FAILED"),
    ]
    assert candidates(log, matcher, limit=2) == [(2, log[1]), (5, "Traceback (most recent call last):")]


@pytest.mark.parametrize(
    "line, cls",
    [
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "oom"),
        ("Segmentation fault (core dumped)", "crash"),
        (SIGABRT, "crash"),
        (ABORT, "crash"),
        ("ConnectionResetError: [Errno 104] Connection reset by peer", "infra"),
        ("TimeoutError: request timed out after 30s", "infra"),
        (BLOB, "infra"),
        ("requests.exceptions.HTTPError: 404 Client Error: Not Found for url", "infra"),
        ("ModuleNotFoundError: No module named 'aiter'", "setup-error"),
        ("ImportError: cannot import name 'foo' from 'bar'", "setup-error"),
        (KIMI, "setup-error"),
        ("AssertionError: outputs differ", "unknown"),
    ],
)
def test_draft_guesses_the_class(line: str, cls: str) -> None:
    assert guess_class(line) == cls
    assert draft(line)["class"] == cls


def test_draft_masks_volatile_parts_and_keeps_case() -> None:
    line = "2026-06-26T12:34:56.1234567Z [2026-06-26 12:34:56 TP3] RuntimeError: worker 7 at 0x7f3a1b2c failed in /opt/sgl/srt/model_runner.py"
    d = draft(line)
    assert d == {
        "id": "runtimeerror-failed-model_runner",
        "text": "RuntimeError: <rank> at <hex> failed in <path>/model_runner.py",
        "class": "unknown",
        "meaning": "",
        "remedy": "",
    }
    assert draft(line, id="my-sig")["id"] == "my-sig"
    # the draft, used as a signature, matches the line it came from exactly,
    # and the same failure with other numbers
    m = Matcher([SignatureSpec(d["id"], d["text"], d["class"])])
    assert m.match_line(line).how == "exact"
    assert m.match_line(line.replace("worker 7", "worker 2").replace("0x7f3a1b2c", "0x55aa")).how == "exact"


def test_draft_id_is_a_valid_rule_id() -> None:
    import re

    for line in (KIMI, BLOB, "!!! ???", "ümlaut Fehler: kaputt"):
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]*", draft(line)["id"])


def test_lines_differing_in_digits_are_not_confused(matcher: Matcher) -> None:
    # scan shares normalisations between lines that differ only in digits;
    # digits that survive normalisation (v1, v2) or a 0x must keep them apart
    m = Matcher([SignatureSpec("stage-timeout", "stage timeout in phase v1", "infra")], engine=matcher.engine)
    got = [(x.line_no, x.how) for x in m.scan(["stage timeout in phase v1", "stage timeout in phase v2", "stage timeout in phase v1"])]
    assert got == [(1, "exact"), (2, "fuzzy"), (3, "exact")]
    m = Matcher([SignatureSpec("bad-pointer", "bad pointer 0x7f3a in allocator", "crash")], engine=matcher.engine)
    got = [(x.line_no, x.how) for x in m.scan(["bad pointer 0x1234 in allocator", "bad pointer 1x1234 in allocator"])]
    assert got[0] == (1, "exact")
    assert (2, "exact") not in got


def test_threshold_is_checked() -> None:
    with pytest.raises(ValueError):
        Matcher(SIGNATURES, threshold=0)
    strict = Matcher(SIGNATURES, threshold=99.5)
    assert strict.match_line(DEEPSEEK) is None  # 93 is below the bar
    assert strict.match_line(KIMI).how == "exact"


def test_a_short_line_is_not_a_long_signature(matcher: Matcher) -> None:
    # A fragment of a signature holds its anchor, and partial_ratio would
    # score it 100 inside the signature; a line shorter than the signature is
    # compared whole (ratio), so the fragment does not match.
    sig = SignatureSpec(
        "nccl-watchdog",
        "Watchdog caught collective operation timeout: WorkNCCL(OpType=ALLREDUCE) ran for 600015 milliseconds before timing out",
        "infra",
    )
    m = Matcher([sig], engine=matcher.engine)
    assert m.match_line("OpType=ALLREDUCE") is None
    assert m.match_line("[rank3]: Watchdog caught collective operation timeout: WorkNCCL(OpType=ALLREDUCE) ran for 600213 milliseconds before timing out").how == "exact"
    assert m.match_line("Watchdog caught collective operation timeout: WorkNCCL(OpType=ALLREDUCE) ran for 600213 ms before timing out").how == "fuzzy"


def test_a_scan_keeps_a_bounded_number_of_matches_and_stops() -> None:
    from triage.ingest import scan as scan_module

    m = Matcher([SignatureSpec("segv", "Segmentation fault in worker", "crash")])
    lines = ["Segmentation fault in worker 1"] * (scan_module.MAX_MATCHES + 10) + ["error: late"]
    scan = scan_module.Scan(m, limit=0)
    scan.feed(lines)
    assert len(scan.matches) == scan_module.MAX_MATCHES
    assert scan.matches_left_out == 1 and scan.full  # stopped reading at the first one left out
    scan = scan_module.Scan(m, limit=2)  # still looking for candidates: reads on
    scan.feed(lines)
    assert scan.matches_left_out == 10 and scan.candidates == [(scan_module.MAX_MATCHES + 11, "error: late")]


def test_a_scan_looks_at_a_bounded_number_of_error_lines(monkeypatch) -> None:
    from triage.ingest import scan as scan_module

    monkeypatch.setattr(scan_module, "MAX_LOOKED", 1000)
    m = Matcher([SignatureSpec("segv", "Segmentation fault in worker", "crash")])
    scan = scan_module.Scan(m, limit=5)
    lines = ["error: x"] * 5000 + ["error: y", "Segmentation fault in worker 3"]
    scan.feed(lines)
    assert scan.candidates == [(1, "error: x")]  # "error: y" comes after the first 1,000
    assert [x.line_no for x in scan.matches] == [5002]
