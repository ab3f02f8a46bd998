"""The screenshot benchmark (``bench_screenshots.py``): its screenshots, its smoke run, its image
check, and its doc section rendered from the stored result alone.

The quick run starts the fast upstream and the real proxy on loopback and sends a few
dozen ~200 kB screenshot calls per path; it checks that the benchmark measures and that
the proxy stored every image once and each call refers to its own, not how fast anything is.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from benchmarks import bench_screenshots
from benchmarks.bench_screenshots import SHOTS
from benchmarks.doc_sections import replace_section
from benchmarks.proxy import stats
from benchmarks.proxy.image_check import check_images
from benchmarks.proxy.screenshots import ScreenshotBodies, ScreenshotPlan, image_indexes, png_screenshot
from components.core.images import dimensions, sniff

REPO = Path(__file__).resolve().parents[2]


def test_a_screenshot_is_a_real_incompressible_png_of_about_200_kb() -> None:
    png = png_screenshot(random.Random(1), 256, 256)
    assert sniff(png) == "image/png" and dimensions("image/png", png) == (256, 256)
    assert 190_000 < len(png) < 210_000
    assert len(zlib.compress(png, 9)) > 0.99 * len(png)  # its size is what goes over the wire


def test_most_calls_bring_a_new_screenshot_and_a_quarter_repeat_the_last() -> None:
    plan = ScreenshotPlan(seed="t")
    indexes = image_indexes(plan, 2000)
    repeats = sum(1 for a, b in zip(indexes, indexes[1:]) if a == b)
    assert 0.2 < repeats / 1999 < 0.3
    assert indexes == image_indexes(plan, 2000) != image_indexes(ScreenshotPlan(seed="u"), 2000)
    assert sorted(set(indexes)) == list(range(max(indexes) + 1))  # new ones in order, none skipped


def test_each_body_carries_its_calls_screenshot_as_a_data_url() -> None:
    plan = ScreenshotPlan(seed="b", width=8, height=4)
    bodies = ScreenshotBodies(plan, 10)
    body = json.loads(bodies.get(3, "s-1 measured 1"))
    text, image = body["messages"][-1]["content"]
    assert text["text"] == "Current page, step s-1 measured 1. What next?"
    assert image["image_url"]["url"].startswith("data:image/png;base64,")


def _cell(variant: str, rps: float, p50_ms: float, cpu_ms: float) -> stats.Cell:
    return stats.Cell(variant=variant, stream=False, clients=16, calls=960, ok=960, failed=0, errors=[], p50_ms=p50_ms,
                      p99_ms=2 * p50_ms, first_chunk_p50_ms=None, rps=rps, server_cpu_ms_per_call=cpu_ms,
                      request_bytes_per_s=rps * 263_000)  # fmt: skip


def test_the_section_shows_the_figures_of_the_dict_it_is_given() -> None:
    cells = [_cell(stats.DIRECT, 950.0, 16.0, 0.6), _cell(stats.OURS, 333.0, 47.5, 2.47)]
    plan = bench_screenshots.FULL.model_dump()
    raw = {"command": bench_screenshots.COMMAND, "date": "2026-12-01 10:00 UTC", "commit": "abc1234",
           "machine": "2 cores", "load_before": [1.0, 2.0, 3.0], "load_after": [1.5, 2.0, 3.0], "clients": 16,
           "plan": json.loads(json.dumps(plan)),  # as stored: the plan's int keys come back as strings
           "screenshot": {"width": 256, "height": 256, "repeat_fraction": 0.25, "png_bytes": 197_000,
                          "data_url_bytes": 263_000},
           "rows": [r.model_dump() for r in stats.rows(cells)],
           "recording": {"answered": 2976, "lines": 2976, "sessions": 48, "invalid": []},
           "images": {"calls": 2976, "distinct_sent": 2229, "files": 2229, "problems": []}}  # fmt: skip
    text = bench_screenshots.section(raw)
    assert text.startswith(f"## {bench_screenshots.SECTION_TITLE}\n")
    assert "Commit: abc1234" in text and "2026-12-01 10:00 UTC" in text
    assert "| OpenForge proxy | 960/960 | 87.6 | 0.35 | 333 | 0.35 | 47.50 | 95.00 | +31.50 | +63.00 | 2.47 |" in text
    assert "3 rounds of 960 calls per path after 32 warm-up calls" in text
    assert "2,229 files in images/" in text and "Rendered from `benchmarks/results/screenshots.json`" in text


def test_the_doc_section_is_the_stored_result_rendered() -> None:
    """Re-rendering benchmarks/results/screenshots.json leaves docs/benchmarks.md as it is: a figure
    typed into the section, or a result stored without its rendering, fails here."""
    doc = bench_screenshots.DOC.read_text()
    raw = json.loads(bench_screenshots.RESULT.read_text())
    assert replace_section(doc, bench_screenshots.SECTION_TITLE, bench_screenshots.section(raw)) == doc
    assert raw["commit"] in doc and raw["date"] in doc


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    workdir = tmp_path_factory.mktemp("bench-screenshots")
    done = subprocess.run(
        [sys.executable, "benchmarks/bench_screenshots.py", "--quick", "--no-doc", "--workdir", str(workdir)],
        cwd=REPO, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, f"quick benchmark failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return workdir, json.loads((workdir / "screenshots.json").read_text())


@pytest.mark.slow
def test_quick_run_measures_both_paths_and_records_every_image(quick_run: tuple[Path, dict]) -> None:
    _, raw = quick_run
    cells = {r["cell"]["variant"]: r["cell"] for r in raw["rows"]}
    assert set(cells) == {stats.DIRECT, stats.OURS}
    for cell in cells.values():
        assert cell["ok"] == cell["calls"] > 0, cell["errors"]
        assert cell["request_bytes_per_s"] > 0 and cell["rps"] > 0
    assert raw["recording"]["ok"] and raw["images"]["ok"], (raw["recording"], raw["images"])
    assert raw["images"]["calls"] == raw["recording"]["lines"] > raw["images"]["distinct_sent"] > 0


@pytest.mark.slow
def test_the_image_check_finds_a_missing_or_stray_file(quick_run: tuple[Path, dict]) -> None:
    workdir, raw = quick_run
    plan = raw["plan"]
    images = workdir / "recordings" / "images"
    victim = sorted(images.iterdir())[0]
    victim.unlink()
    (images / "stray.png").write_bytes(b"not a screenshot")
    check = check_images(workdir / "recordings", SHOTS, plan["warmup"]["16"], plan["calls"]["16"])
    assert not check.ok
    assert f"images/{victim.name}: missing" in check.problems
    assert any("stray.png" in problem for problem in check.problems)
