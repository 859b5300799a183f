"""The dashboard in a real browser: headless Chromium opens `/` and the bundled
investigation's page from the real server; the text is there and the chart is
painted (its bar colour in the screenshot, saved under the test's directory)."""

from __future__ import annotations

import pytest

from tests.support.png import colour_count
from tests.support.serving import Server
from tests.support.browser import browse

BAR = (0x4C, 0x78, 0xA8)  # the chart's bar colour


@pytest.mark.slow
def test_chromium_reads_the_dashboard_and_sees_the_chart(seeded, fake_github, tmp_path):
    srv = Server(tmp_path, fake_github, "--insecure-no-signature").start()
    try:
        index = browse(f"{srv.url}/", tmp_path, "--dump-dom")
        assert index.returncode == 0, index.stderr[-2000:]
        assert "Kimi-K2.6 MI355X 1P1D disagg" in index.stdout and "sgl-project/sglang#30433" in index.stdout
        assert "gsm8k ≥ 0.92" in index.stdout and "1 confirmed, 12 ruled out" in index.stdout

        page_url = f"{srv.url}/pr/sgl-project/sglang/30433"
        page = browse(page_url, tmp_path, "--dump-dom")
        assert page.returncode == 0, page.stderr[-2000:]
        dom = page.stdout
        for text in ("Hypotheses", "History of status changes", "Bisect", "first bad", "last good"):
            assert text in dom, text
        assert dom.count('class="bar"') >= 10 and 'class="chart"' in dom

        shot = tmp_path / "investigation.png"
        taken = browse(page_url, tmp_path, f"--screenshot={shot}")
        assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
        assert colour_count(shot, BAR) > 2000  # the bars were painted
        assert colour_count(shot, (0xD7, 0x3A, 0x49)) > 50  # the red gate line and red marks
    finally:
        srv.stop()
