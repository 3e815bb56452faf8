"""report.html in a real browser (headless Chromium through Selenium): the summary on the
first screen, no sideways scrolling at 1,400 px with every section unfolded, every image
loaded, and folding that keeps the page short."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from reports.report import build_report

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
WIDTH, HEIGHT = 1400, 900

# What the page measures: its size, each image's load, where the summary starts; then the
# same with every <details> open.
MEASURE = """
const sizes = () => ({height: document.documentElement.scrollHeight,
                      width: document.documentElement.scrollWidth});
const folded = sizes();
const summary = document.getElementById('summary').getBoundingClientRect();
const images = Array.from(document.images, i => [i.alt, i.complete && i.naturalWidth > 0]);
document.querySelectorAll('details').forEach(d => { d.open = true; });
return {folded, unfolded: sizes(), images, summaryTop: summary.top,
        window: [window.innerWidth, window.innerHeight]};
"""


def measure(html: Path, profile: Path) -> dict:
    """Open `html` in headless Chromium with a WIDTH x HEIGHT window and measure it (see
    MEASURE); skips where Chromium, its driver or Selenium is missing."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed "
                                    "(pip install -e '.[dev]')")
    from selenium.webdriver.chrome.service import Service

    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not shutil.which(p)]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (Debian: apt-get install chromium "
                    "chromium-driver; ci/setup.sh does it as root)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                 f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.set_window_size(WIDTH, HEIGHT)
        driver.get(html.resolve().as_uri())
        return driver.execute_script(MEASURE)
    finally:
        driver.quit()


@pytest.fixture
def wide_run(measurement, results_file, tmp_path):
    """Results whose tables would be wide: long params and reasons, many workloads and
    backends (more than one plot holds), a skip reason naming each device, a conformance
    file with a failure."""
    ms = []
    backends = ("cpu", "opencl", "tvm")
    for i in range(45):
        for j, b in enumerate(backends):
            m = measurement(f"workload_{i}", b, 0.001 * (1 + (i * j) % 7), i * 10 + j)
            ms.append(dataclasses.replace(m, params={"shape": [1024, 1024 + i],
                                                     "layout": "row-major-" + "x" * 40}))
    reason = "UnsupportedDType: complex64 on {} has no kernel; " + "a long explanation " * 30
    for b in backends[1:]:
        m = measurement("fft_with_a_long_name", b, 0.0, 99, status="skipped")
        ms.append(dataclasses.replace(m, error=reason.format(f"{b}:0")))
    results = results_file("wide.jsonl", ms)
    cells = [{"op": f"op{k}", "dtype": "float32", "status": "pass", "ran": "kernel"}
             for k in range(40)]
    cells.append({"op": "matmul", "dtype": "float16", "status": "fail",
                  "error": "mismatch " * 80})
    conformance = tmp_path / "conformance.json"
    conformance.write_text(json.dumps([{"backend": "opencl", "device": "opencl:0",
                                        "ok": False, "cells": cells}]))
    return [results, conformance]


def test_summary_first_no_sideways_scrolling_every_image(wide_run, tmp_path):
    out = tmp_path / "report"
    written = build_report(wide_run, out)
    page = measure(out / "report.html", tmp_path / "profile")
    assert page["window"][0] == WIDTH
    assert 0 <= page["summaryTop"] < page["window"][1]  # the three answers on the first screen
    assert page["folded"]["width"] <= WIDTH and page["unfolded"]["width"] <= WIDTH
    assert page["unfolded"]["height"] > 2 * page["folded"]["height"]  # the details fold
    plots = sorted(p.name for p in written if p.suffix == ".png")
    assert sorted(alt for alt, _ in page["images"]) == plots
    assert all(loaded for _, loaded in page["images"]), page["images"]
