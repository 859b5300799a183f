"""The rendered comment as a reviewer sees it: cmark-gfm HTML with GitHub-like
CSS, drawn by headless Chromium (issue #12).

The test saves ``comment.html`` and ``comment.png`` (folds closed, as GitHub
first shows them) under ``tests/output/`` (or ``$TRIAGE_TEST_OUTPUT``) for a
person to look at, and measures in the browser how tall the first screen and
the whole folded comment are.  Without Chromium it is skipped, except in CI
(``CI`` set), where it fails.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
from pathlib import Path


from tests.support.gfm import gfm
from tests.support.browser import chromium

OUTPUT = Path(os.environ.get("TRIAGE_TEST_OUTPUT") or Path(__file__).resolve().parents[1] / "output")
WIDTH = 1012  # GitHub's comment column on a laptop screen
SCREEN = 900  # what a reviewer sees before scrolling

# The parts of GitHub's markdown-body style that decide the layout.
CSS = """
body { margin: 0; background: #fff; }
.markdown-body { box-sizing: border-box; width: 100%; padding: 16px 24px; color: #1f2328;
  font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif;
  font-size: 14px; line-height: 1.5; word-wrap: break-word; }
.markdown-body h2 { font-size: 1.5em; font-weight: 600; padding-bottom: .3em; border-bottom: 1px solid #d1d9e0;
  margin: 0 0 16px; }
.markdown-body h3 { font-size: 1.25em; font-weight: 600; margin: 24px 0 16px; }
.markdown-body p, .markdown-body ul, .markdown-body ol, .markdown-body table, .markdown-body pre,
.markdown-body details { margin: 0 0 16px; }
.markdown-body ul, .markdown-body ol { padding-left: 2em; }
.markdown-body code { padding: .2em .4em; font-size: 85%; background: rgba(129,139,152,.12); border-radius: 6px;
  font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.markdown-body pre { padding: 16px; overflow: auto; font-size: 85%; line-height: 1.45; background: #f6f8fa;
  border-radius: 6px; }
.markdown-body pre code { padding: 0; background: transparent; font-size: 100%; white-space: pre; }
.markdown-body table { display: block; width: max-content; max-width: 100%; overflow: auto;
  border-spacing: 0; border-collapse: collapse; }
.markdown-body th, .markdown-body td { padding: 6px 13px; border: 1px solid #d1d9e0; }
.markdown-body th { font-weight: 600; }
.markdown-body tr:nth-child(2n) { background: #f6f8fa; }
.markdown-body summary { cursor: pointer; }
.markdown-body a { color: #0969da; text-decoration: none; }
"""

# Written into the page's DOM once it is laid out: the first fold's top and the page's height.
MEASURE = """
<script>
window.addEventListener("load", () => {
  const fold = document.querySelector("details");
  document.body.dataset.firstScreen = Math.round(fold ? fold.getBoundingClientRect().top : document.body.scrollHeight);
  document.body.dataset.height = Math.round(document.body.scrollHeight);
});
</script>
"""


def page(body: str) -> str:
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape('comment')}</title>"
            f"<style>{CSS}</style></head><body><article class='markdown-body'>{gfm(body)}</article>"
            f"{MEASURE}</body></html>")


def run(exe: str, *args: str) -> str:
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           "--disable-dev-shm-usage", f"--window-size={WIDTH},{SCREEN}", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_rendered_comment_shows_its_verdict_in_one_screen(cli, seeded):
    exe = chromium()
    r = cli("report", "--pr", "30433")
    assert r.code == 0, r.err
    OUTPUT.mkdir(parents=True, exist_ok=True)
    html_path = OUTPUT / "comment.html"
    html_path.write_text(page(r.out), encoding="utf-8")

    dom = run(exe, "--virtual-time-budget=5000", "--dump-dom", html_path.as_uri())
    first = int(re.search(r'data-first-screen="(\d+)"', dom).group(1))
    height = int(re.search(r'data-height="(\d+)"', dom).group(1))
    # the verdict, the bisect answers and the next experiments fit one screen
    assert 200 < first <= SCREEN, first
    assert height > first

    png = OUTPUT / "comment.png"
    png.unlink(missing_ok=True)
    run(exe, f"--window-size={WIDTH},{min(height, 16_000)}", f"--screenshot={png}", html_path.as_uri())
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, tall = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width == WIDTH and tall == min(height, 16_000)
