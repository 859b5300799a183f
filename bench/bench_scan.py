"""Benchmark: Matcher.scan against grep on a 1,000,000-line CI log.

    .venv/bin/python bench/bench_scan.py [--lines N] [--signatures N] [--limit R] [--engine E]

Generates (seeded, deterministic) a ~100 MB synthetic CI log in bench/out/
with ~0.5% error lines, some of which are known failures, and 500
signatures (the bundled kinds plus synthetic ones).  Times
``grep -c -i -E 'error|fail|abort' FILE`` and ``Matcher.scan`` over the same
file (best of 3 each), checks that every planted known failure is found under
the right signature and nothing else is, and checks that peak memory does not
grow with the log (scanning the whole log must need at most 16 MiB more than
scanning its first half).  The ratio is that of ``scan_log``, the one pass
``triage scan`` makes (known failures and unmatched error lines together),
in-process: the command's start-up (interpreter, imports, rule files) is a
fixed cost, not a cost per line, and is timed apart, end to end.  Exits 1
when that pass is slower than ``--limit`` (5) times grep, when memory grows
too much, or when a match is wrong.  The fast
path needs the google-re2 package; without it the Python ``re`` fallback
gives the same matches many times slower, and this benchmark fails.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from common import print_rows, verdict  # noqa: E402
from triage.ingest.logread import scan_log  # noqa: E402
from triage.ingest.logs import open_log  # noqa: E402
from triage.ingest.matcher import HAVE_RE2, Matcher, SignatureSpec  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
SEED = 20260626
GENERATOR_VERSION = 5
MAX_RSS_GROWTH_MIB = 64  # in all, while scanning
MAX_RSS_GROWTH_FULL_MIB = 16  # from scanning the first half of the log to scanning all of it
HEAD_FRACTION = 2

# ---------------------------------------------------------------------------
# Signatures

# The kinds of rules/signatures.yaml (abi-mismatch as a regex: the real line has a
# path between "ImportError:" and "undefined symbol") and other common CI failures,
# each with line makers that produce real-looking occurrences.
BUNDLED: list[tuple[SignatureSpec, list]] = []


def _bundled() -> None:
    def add(spec, *makers):
        BUNDLED.append((spec, list(makers)))

    add(
        SignatureSpec("unregistered-model", "ValueError: 'KimiK25ForConditionalGeneration' is not a registered model", "setup-error"),
        lambda r: "ValueError: 'KimiK25ForConditionalGeneration' is not a registered model",
        lambda r: f"ValueError: '{r.choice(['DeepseekV4ForCausalLM', 'Qwen3NextForCausalLM', 'GlmMoeForCausalLM', 'MiniMaxM2ForCausalLM'])}' is not a registered model",
    )
    add(
        SignatureSpec("init-abort", r"(SIGABRT|[Ss]ignal 6\b|exit(ed)? with (code|status) -6|Fatal Python error: Aborted)", "crash", regex=True),
        lambda r: "Fatal Python error: Aborted",
        lambda r: "Process exited with signal SIGABRT (-6)",
        lambda r: f"Scheduler process {r.randrange(1000, 99999)} exited with code -6",
    )
    add(
        SignatureSpec("blob-not-found", "The specified blob does not exist. ErrorCode:BlobNotFound", "infra"),
        lambda r: "azure.core.exceptions.ResourceNotFoundError: The specified blob does not exist. ErrorCode:BlobNotFound",
    )
    add(
        SignatureSpec("cuda-oom", "torch.OutOfMemoryError: CUDA out of memory.", "oom"),
        lambda r: f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {r.randrange(1, 64)}.{r.randrange(100):02d} GiB. GPU {r.randrange(8)} has a total capacity of 191.98 GiB of which {r.random():.2f} GiB is free.",
    )
    add(
        SignatureSpec("nccl-watchdog", "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600015 milliseconds before timing out.", "infra"),
        lambda r: f"[rank{r.randrange(8)}]:[E{r.randrange(100, 999)} 03:14:{r.randrange(10, 59)}.{r.randrange(10**6)} ProcessGroupNCCL.cpp:632] [Rank {r.randrange(8)}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={r.randrange(10**5)}, OpType=ALLREDUCE, NumelIn={r.randrange(10**6)}, NumelOut={r.randrange(10**6)}, Timeout(ms)=600000) ran for {600000 + r.randrange(100)} milliseconds before timing out.",
    )
    add(
        SignatureSpec("conn-refused", "ConnectionRefusedError: [Errno 111] Connection refused", "infra"),
        lambda r: "ConnectionRefusedError: [Errno 111] Connection refused",
        lambda r: f"requests.exceptions.ConnectionError: HTTPConnectionPool(host='127.0.0.1', port={r.randrange(20000, 40000)}): Max retries exceeded (Caused by NewConnectionError(ConnectionRefusedError: [Errno 111] Connection refused))",
    )
    add(
        SignatureSpec("no-space", "OSError: [Errno 28] No space left on device", "infra"),
        lambda r: f"OSError: [Errno 28] No space left on device: '/tmp/torchinductor_root/{r.randrange(16**6):06x}/c{r.randrange(999)}.py'",
    )
    add(
        SignatureSpec("segfault", "Segmentation fault (core dumped)", "crash"),
        lambda r: f"bash: line 1: {r.randrange(100, 99999)} Segmentation fault (core dumped) python3 -m sglang.launch_server --tp {r.choice([2, 4, 8])}",
    )
    add(
        SignatureSpec("hip-illegal-access", "RuntimeError: HIP error: an illegal memory access was encountered", "crash"),
        lambda r: "RuntimeError: HIP error: an illegal memory access was encountered",
    )
    add(
        SignatureSpec("module-missing", "ModuleNotFoundError: No module named 'aiter'", "setup-error"),
        lambda r: "ModuleNotFoundError: No module named 'aiter'",
        lambda r: f"ModuleNotFoundError: No module named '{r.choice(['sgl_kernel', 'flashinfer', 'triton_kernels'])}'",
    )
    add(
        SignatureSpec("port-in-use", "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): address already in use", "infra"),
        lambda r: f"ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', {r.randrange(20000, 40000)}): address already in use",
    )
    add(
        SignatureSpec("runner-lost", "The self-hosted runner: mi355-runner-12 lost communication with the server.", "infra"),
        lambda r: f"##[error]The self-hosted runner: mi355-runner-{r.randrange(40)} lost communication with the server. Verify the machine is running and has a healthy network connection.",
    )
    add(
        SignatureSpec("hf-404", "huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error.", "infra"),
        lambda r: f"huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error. (Request ID: Root=1-{r.randrange(16**8):08x}-{r.randrange(16**12):012x})",
    )
    add(
        SignatureSpec("abi-mismatch", r"ImportError: .*undefined symbol", "setup-error", regex=True),
        lambda r: "ImportError: /usr/local/lib/python3.12/dist-packages/sgl_kernel/common_ops.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi",
    )


_bundled()

SYLLABLES = "ka lo mi ra ne tu vo si pe da fu gi ho ju ze bo ly wu xe qa".split()
NOUNS = "block page slot token batch expert layer shard tensor graph stream queue window buffer cache plan".split()
VERBS = "allocate dispatch gather scatter reduce launch capture prefetch evict commit resolve verify".split()
EXCS = ["RuntimeError", "ValueError", "AssertionError", "TypeError", "KeyError", "OSError", "torch.distributed.DistBackendError", "triton.runtime.errors.OutOfResources", "NotImplementedError"]


def _ident(r: random.Random, used: set[str]) -> str:
    while True:
        name = "_".join(
            [r.choice(VERBS), "".join(r.choice(SYLLABLES) for _ in range(r.randrange(2, 4))), r.choice(NOUNS)]
        )
        if name not in used:
            used.add(name)
            return name


def _num(r: random.Random) -> str:
    return str(r.choice([r.randrange(2, 64), r.randrange(64, 100000)]))


def synthetic(r: random.Random, n: int) -> list[tuple[SignatureSpec, list]]:
    """n synthetic signatures with line makers; about 5% are regexes."""
    used: set[str] = set()
    out = []
    templates = [
        ("{exc}: {ident} failed: expected {a} blocks but got {b}", False),
        ("{exc}: {ident}() got an unexpected keyword argument '{kw}'", False),
        ("{exc}: unsupported dtype torch.float8_e4m3fnuz in {ident} (head_dim={a})", False),
        ("{exc}: [{ident}] shape mismatch: ({a}, {b}) vs ({b}, {a})", False),
        ("{exc}: timed out after {a}s waiting for {ident}", False),
        ("{exc}: kernel '{ident}' launch failed with status {a}", False),
        ("{exc}: {ident}: no such file or directory: '/opt/venv/lib/{ident}.so'", False),
    ]
    for i in range(n):
        exc = r.choice(EXCS)
        ident = _ident(r, used)
        kw = r.choice(["page_size", "num_splits", "use_fp8", "topk_group"])
        if i % 20 == 19:
            code_words = ["failed", "aborted"]
            text = rf"{exc.split('.')[-1]}: .*\b{ident}\b.* (?:failed|aborted) with code -?\d+"
            spec = SignatureSpec(f"syn-{i:03d}", text, "known-bug", regex=True)
            makers = [
                lambda r, exc=exc, ident=ident, w=r.choice(code_words): f"{exc}: worker in {ident} step {r.randrange(999)} {w} with code -{r.randrange(1, 16)}"
            ]
        else:
            tpl, _ = templates[i % len(templates)]
            a, b = _num(r), _num(r)
            text = tpl.format(exc=exc, ident=ident, a=a, b=b, kw=kw)
            spec = SignatureSpec(f"syn-{i:03d}", text, r.choice(["known-bug", "setup-error", "infra", "crash"]))
            makers = [
                lambda r, tpl=tpl, exc=exc, ident=ident, kw=kw: tpl.format(exc=exc, ident=ident, a=_num(r), b=_num(r), kw=kw)
            ]
        out.append((spec, makers))
    return out


def all_signatures(n: int) -> list[tuple[SignatureSpec, list]]:
    r = random.Random(SEED + 1)
    return BUNDLED + synthetic(r, n - len(BUNDLED))


# ---------------------------------------------------------------------------
# The log

MODELS = ["DeepseekV3ForCausalLM", "KimiK25ForConditionalGeneration", "Qwen3MoeForCausalLM"]
UNKNOWN_ERRORS = [
    lambda r: "Traceback (most recent call last):",
    lambda r: f'  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line {r.randrange(100, 3000)}, in event_loop_normal',
    lambda r: f"AssertionError: accuracy {r.random():.3f} below threshold 0.92",
    lambda r: f"FAILED test/srt/test_gsm8k_eval.py::TestEvalAccuracy::test_accuracy_{r.randrange(9)} - AssertionError",
    lambda r: f"RuntimeError: expected scalar type BFloat16 but found Float in step {r.randrange(9999)}",
    lambda r: f"ERROR: Could not build wheels for pkg{r.randrange(50)}, which is required to install pyproject.toml-based projects",
    lambda r: f"[{r.randrange(24):02d}:{r.randrange(60):02d}:{r.randrange(60):02d}] fatal: unable to access 'https://github.com/org/repo{r.randrange(30)}.git/': The requested URL returned error: 500",
    lambda r: f"TimeoutError: benchmark client got no response in {r.randrange(30, 600)} seconds",
]


def normal_line(r: random.Random, i: int, hms: str) -> str:
    k = r.random()
    tp = r.randrange(8)
    if k < 0.22:
        return (
            f"[2026-06-26 {hms} TP{tp}] Decode batch. #running-req: {r.randrange(64)}, "
            f"token usage: 0.{r.randrange(100):02d}, gen throughput (token/s): {r.random() * 4000:.2f}"
        )
    if k < 0.30:
        return f"[2026-06-26 {hms} TP{tp}] Prefill batch. #new-seq: {r.randrange(1, 9)}, #new-token: {r.randrange(8192)}"
    if k < 0.50:
        return f'[2026-06-26 {hms}] INFO:     127.0.0.1:{r.randrange(30000, 60000)} - "POST /generate HTTP/1.1" 200 OK'
    if k < 0.62:
        return f"test/srt/test_{r.choice(['gsm8k_eval', 'mla', 'moe_ep', 'disagg'])}.py::Test{r.randrange(40)}::test_case_{r.randrange(200)} PASSED [{r.randrange(100):3d}%]"
    if k < 0.72:
        done = r.randrange(1320)
        return f"{done * 100 // 1319:3d}%|{'█' * (done * 10 // 1319):<10}| {done}/1319 [{r.randrange(60):02d}:{r.randrange(60):02d}<{r.randrange(60):02d}:{r.randrange(60):02d}, {r.random() * 30:.2f}it/s]"
    if k < 0.77:
        pkg = r.choice(["torch==2.9.1", "transformers==4.57.1", "numpy==2.2.6", "safetensors==0.6.2", "aiohttp==3.12.15"])
        return f"Requirement already satisfied: {pkg} in /usr/local/lib/python3.12/dist-packages"
    if k < 0.85:
        return f"node-{r.randrange(64)}:{r.randrange(10**5)}:{r.randrange(10**5)} [{tp}] NCCL INFO Channel {r.randrange(32):02d}/32 : {tp}[{tp}] -> {(tp + 1) % 8}[{(tp + 1) % 8}] via P2P/IPC"
    if k < 0.88:
        return f"[2026-06-26 {hms} DP{tp} TP{tp}] Load weight end. type={r.choice(MODELS)}, dtype=torch.bfloat16, avail mem={r.random() * 100:.2f} GB"
    if k < 0.91:
        return f"#{r.randrange(40)} [stage-1 {r.randrange(1, 10)}/9] RUN pip install -e 'python[all]'"
    if k < 0.94:
        return f"/usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py:{r.randrange(30, 90)}: FutureWarning: The pynvml package is deprecated."
    if k < 0.97:
        return f"[2026-06-26 {hms} TP{tp}] Capture cuda graph bs [1, 2, 4, 8, 16, 24, 32] avail mem={r.random() * 100:.2f} GB"
    return f"Accuracy: {r.random():.3f}  Invalid: {r.random() / 100:.3f}  Latency: {r.random() * 300:.3f} s"


def generate(path: Path, truth_path: Path, lines: int, sigs: list[tuple[SignatureSpec, list]]) -> None:
    """Write the log and a JSON of the planted failures: {line_no: signature id or null}."""
    r = random.Random(SEED)
    truth: dict[int, str | None] = {}
    # Bundled kinds show up more often than any one synthetic signature.
    weights = [40.0 if k < len(BUNDLED) else 1.0 for k in range(len(sigs))]
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8", buffering=1 << 20) as f:
        for i in range(1, lines + 1):
            sec = i // 200
            hms = f"{(sec // 3600) % 24:02d}:{(sec // 60) % 60:02d}:{sec % 60:02d}"
            gh = f"2026-06-26T{hms}.{(i * 7919) % 10**7:07d}Z "
            if r.random() < 0.005:
                if r.random() < 0.4:
                    spec, makers = r.choices(sigs, weights)[0]
                    body = r.choice(makers)(r)
                    truth[i] = spec.id
                else:
                    body = r.choice(UNKNOWN_ERRORS)(r)
                    truth[i] = None
                if r.random() < 0.5:
                    body = f"[2026-06-26 {hms} TP{r.randrange(8)}] " + body
                f.write(gh + body + "\n")
            else:
                f.write(gh + normal_line(r, i, hms) + "\n")
    os.replace(tmp, path)
    truth_path.write_text(json.dumps({str(k): v for k, v in truth.items()}))


# ---------------------------------------------------------------------------
# Measuring


def best_of(n: int, fn) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(n):
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return best, result


def max_rss_mib() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1 << 20) if sys.platform == "darwin" else rss / 1024


def time_cli(log: Path, sigs: list[tuple[SignatureSpec, list]]) -> float:
    """`triage scan LOG` as a subprocess, its signatures in a rule file (loaded
    into a scratch knowledge base by a first run); the second run is timed."""
    import tempfile

    import yaml

    triage = str(Path(sys.executable).parent / "triage")
    with tempfile.TemporaryDirectory() as tmp:
        rules = Path(tmp) / "rules"
        rules.mkdir()
        specs = [{"id": s.id, "text": s.text, "class": s.cls} | ({"regex": True} if s.regex else {}) for s, _ in sigs]
        (rules / "signatures.yaml").write_text(yaml.safe_dump({"schema_version": 1, "signatures": specs}, width=1000))
        cmd = [triage, "scan", str(log), "--format", "json"]
        subprocess.run(cmd, cwd=tmp, check=True, stdout=subprocess.DEVNULL)
        t = time.perf_counter()
        subprocess.run(cmd, cwd=tmp, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - t


def _ere(sig: SignatureSpec) -> str:
    """A signature's pattern as grep -E reads it."""
    import re

    if not sig.regex:
        return re.sub(r"([.\[\](){}*+?|^$\\])", r"\\\1", sig.text)
    text = sig.text
    for py, posix in (("\\d", "[0-9]"), ("\\s", "[[:space:]]"), ("\\w", "[[:alnum:]_]"), ("(?:", "(")):
        text = text.replace(py, posix)
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--signatures", type=int, default=500)
    ap.add_argument("--limit", type=float, default=5.0, help="largest allowed scan/grep time ratio")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--engine", choices=["auto", "re2", "re"], default="auto", help="the prefilter engine (re is the fallback without google-re2)")
    ap.add_argument("--no-cli", dest="cli", action="store_false", help="skip timing the `triage scan` command end to end")
    args = ap.parse_args(argv)

    grep = shutil.which("grep")
    if grep is None:
        print("grep not found: nothing to compare with", file=sys.stderr)
        return 2

    OUT.mkdir(parents=True, exist_ok=True)
    sigs = all_signatures(args.signatures)
    stem = f"scan-{args.lines}-{args.signatures}-v{GENERATOR_VERSION}"
    log, truth_file = OUT / f"{stem}.log", OUT / f"{stem}.truth.json"
    if not (log.exists() and truth_file.exists()):
        t = time.perf_counter()
        generate(log, truth_file, args.lines, sigs)
        print(f"generated {log.relative_to(ROOT)} in {time.perf_counter() - t:.1f} s")
    truth = {int(k): v for k, v in json.loads(truth_file.read_text()).items()}
    size = log.stat().st_size
    head = OUT / f"{stem}.head{HEAD_FRACTION}.log"
    if not head.exists():
        with open(log, "rb") as src, open(head, "wb") as dst:
            for k, raw in enumerate(src):
                if k >= args.lines // HEAD_FRACTION:
                    break
                dst.write(raw)

    t = time.perf_counter()
    matcher = Matcher([s for s, _ in sigs], engine=args.engine)
    build = time.perf_counter() - t
    n_regex = sum(1 for s, _ in sigs if s.regex)
    n_anchors = len({a for v in matcher.anchors().values() for a in v})

    pattern = "error|fail|abort"
    grep_t, grep_out = best_of(
        args.repeat,
        lambda: subprocess.run([grep, "-c", "-i", "-E", pattern, str(log)], capture_output=True, text=True).stdout.strip(),
    )

    # The same patterns as the signatures, for grep -f: literal texts escaped
    # for ERE, regexes with Python's class escapes spelled as POSIX classes.
    patterns = OUT / f"{stem}.patterns"
    patterns.write_text("\n".join(_ere(sig) for sig, _ in sigs) + "\n", encoding="utf-8")
    grep_f_t, grep_f_out = best_of(
        args.repeat,
        lambda: subprocess.run([grep, "-c", "-i", "-E", "-f", str(patterns), str(log)], capture_output=True,
                               text=True).stdout.strip(),
    )

    def run_scan(path=log):
        with open_log(str(path)) as f:
            return list(matcher.scan(f))

    # Memory: peak RSS after scanning the first half of the log, then all of it.
    # Flat means the second scan adds (almost) nothing to the first.
    rss0 = max_rss_mib()
    run_scan(head)
    rss_head = max_rss_mib() - rss0
    scan_t, matches = best_of(args.repeat, run_scan)
    rss_growth = max_rss_mib() - rss0

    def run_prefilter():
        with open_log(str(log)) as f:
            return sum(1 for _ in matcher.prefilter(f))

    pre_t, n_candidates = best_of(1, run_prefilter)

    # What `triage scan` runs: one pass for the matches and the unmatched error lines.
    def run_command_scan():
        with open_log(str(log)) as f:
            return scan_log(f, matcher, candidates=50)

    cmd_t, cmd_found = best_of(args.repeat, run_command_scan)
    cli_t = time_cli(log, sigs) if args.cli else None

    # Correctness against the planted failures.
    found = {m.line_no: m for m in matches}
    expected = {k: v for k, v in truth.items() if v is not None}
    missed = [k for k in expected if k not in found]
    wrong = [k for k in expected if k in found and found[k].signature_id != expected[k]]
    extra = [k for k in found if k not in expected]
    hows: dict[str, int] = {}
    for m in matches:
        hows[m.how] = hows.get(m.how, 0) + 1

    ratio = cmd_t / grep_t
    if [(m.line_no, m.signature_id) for m in cmd_found.matches] != [(m.line_no, m.signature_id) for m in matches]:
        missed = missed or ["scan_log and Matcher.scan disagree"]
    locale = os.environ.get("LC_ALL") or os.environ.get("LC_CTYPE") or os.environ.get("LANG") or "(unset)"
    rows = [
        ("log", f"{log.relative_to(ROOT)}: {args.lines:,} lines, {size / 1e6:.1f} MB"),
        ("signatures", f"{len(sigs)} ({len(sigs) - n_regex} literal, {n_regex} regex), {n_anchors} anchor words"),
        ("engine", f"{matcher.engine} (google-re2 {'installed' if HAVE_RE2 else 'missing'}), matcher built in {build * 1000:.0f} ms"),
        (f"grep -c -i -E '{pattern}'", f"{grep_t:.3f} s  (count {grep_out}, locale {locale}, best of {args.repeat})"),
        ("Matcher.scan", f"{scan_t:.3f} s  ({len(matches):,} matches: {', '.join(f'{k} {v}' for k, v in sorted(hows.items()))}; best of {args.repeat})"),
        ("  of which prefilter", f"{pre_t:.3f} s  ({n_candidates:,} candidate lines looked at in Python)"),
        ("scan_log (`triage scan`)", f"{cmd_t:.3f} s  (the matches and {len(cmd_found.candidates)} unmatched error lines, one pass; best of {args.repeat})"),
        ("ratio scan / grep", f"{ratio:.2f}  (limit {args.limit:g})"),
        (f"grep -c -i -E -f ({len(sigs)} signature patterns)", f"{grep_f_t:.3f} s  (count {grep_f_out}, best of {args.repeat})"),
        ("ratio scan / grep -f", f"{cmd_t / grep_f_t:.2f}  (information: the same patterns, one pass each)"),
        (
            "peak RSS growth",
            f"+{rss_head:.1f} MiB scanning the first {100 // HEAD_FRACTION}% ({head.stat().st_size / (1 << 20):.0f} MiB), "
            f"+{rss_growth:.1f} MiB after the whole log ({size / (1 << 20):.0f} MiB)",
        ),
        ("planted failures", f"{len(expected) - len(missed) - len(wrong)}/{len(expected)} found right, {len(missed)} missed, {len(wrong)} wrong, {len(extra)} unexpected"),
    ]
    if cli_t is not None:
        rows.append(("`triage scan` command", f"{cli_t:.3f} s  (end to end: start-up, {len(sigs)} signatures from a rule file, JSON out)"))
    print_rows(rows)

    lines_of = {}
    if missed or wrong or extra:
        want = set(missed[:5] + wrong[:5] + extra[:5])
        with open_log(str(log)) as f:
            for no, line in enumerate(f, 1):
                if no in want:
                    lines_of[no] = line
        for k in missed[:5]:
            print(f"  missed {k} ({expected[k]}): {lines_of.get(k)}")
        for k in wrong[:5]:
            print(f"  wrong {k}: {found[k].signature_id} instead of {expected[k]}: {lines_of.get(k)}")
        for k in extra[:5]:
            print(f"  unexpected {k}: {found[k].signature_id}: {lines_of.get(k)}")

    failures = []
    if ratio > args.limit:
        failures.append(f"scan took {ratio:.2f}x grep's time (limit {args.limit:g}x)")
    if rss_growth > MAX_RSS_GROWTH_MIB or rss_growth - rss_head > MAX_RSS_GROWTH_FULL_MIB:
        failures.append(
            f"peak memory grew by {rss_growth:.1f} MiB while scanning ({rss_growth - rss_head:.1f} MiB more "
            f"for the whole log than for its head; limits {MAX_RSS_GROWTH_MIB} and {MAX_RSS_GROWTH_FULL_MIB} MiB)"
        )
    differ = ["the matches differ from the planted failures"] if missed or wrong or extra else []
    return verdict(failures, differ)


if __name__ == "__main__":
    sys.exit(main())
