"""The engines part of the overhead benchmark: its figures, its subsection and its skip, on
hand-made measurements (starting vLLM takes minutes; `bench_overhead.py --engines` does that)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.doc_sections import replace_subsection
from benchmarks.overhead import engines, report
from benchmarks.overhead.engines import LONG_CACHED, LONG_COLD, SHORT, Call, EngineComparison, EngineFigures


def _figures(name: str, startup_s: float, short: list[float], cold: list[float], cached: list[float]) -> EngineFigures:
    calls = {
        SHORT: tuple(Call(s, 62, 48) for s in short),
        LONG_COLD: tuple(Call(s, 4053, 48 if i else 20) for i, s in enumerate(cold)),  # one ended early
        LONG_CACHED: tuple(Call(s, 4134, 48) for s in cached),
    }
    return EngineFigures(name, startup_s, calls)


_DEV = _figures("dev engine", 10.0, [0.3, 0.2, 0.9], [2.0, 1.0, 1.5], [0.5, 0.5, 0.4])
_VLLM = _figures("vLLM", 95.0, [0.6, 0.4, 0.5], [3.0, 3.0, 9.0], [0.2, 0.3, 0.2])


def _comparison(vllm: EngineFigures | None, skipped: str = "") -> EngineComparison:
    return EngineComparison("cmd --engines", "today", "abc1234", "2 cores", (1.0, 1.0, 1.0), (2.0, 2.0, 2.0), _DEV, vllm, "0.32.0" if vllm else "", skipped)


def test_medians_ratios_and_token_counts_land_in_the_table() -> None:
    text = engines.subsection_markdown(_comparison(_VLLM))

    assert text.startswith(f"### {engines.SUBSECTION}\n")
    assert "Command: `cmd --engines`. Date: today. Commit: abc1234. Machine: 2 cores;" in text
    assert "vLLM 0.32.0 (CPU build, `make vllm`)" in text and "`--enforce-eager --no-enable-chunked-prefill" in text
    assert "| start-up to ready (health, then version gate) |  | 10.00 s | 95.00 s | 9.5x |" in text
    assert "| call: short prompt, median | 62 + 48 / 62 + 48 | 0.30 s | 0.50 s | 1.7x |" in text
    assert "| call: ~4k-token prompt, cold, median | 4053 + 20-48 / 4053 + 20-48 | 1.50 s | 3.00 s | 2.0x |" in text
    assert "| call: same prompt, next turn (prefix cached), median | 4134 + 48 / 4134 + 48 | 0.50 s | 0.20 s | 0.4x |" in text


def test_without_vllm_the_part_says_why_and_shows_the_dev_engine_alone() -> None:
    comparison = _comparison(None, "vLLM's CPU build is not installed in .venv-vllm: run `make vllm`")

    text = engines.subsection_markdown(comparison)
    terminal = engines.terminal_lines(comparison)

    assert "**vLLM not measured**: vLLM's CPU build is not installed in .venv-vllm: run `make vllm`" in text
    assert "| call: short prompt, median | 62 + 48 | 0.30 s | - |  |" in text
    assert terminal[-1] == "vLLM skipped: vLLM's CPU build is not installed in .venv-vllm: run `make vllm`"
    assert not any("**" in line or line.startswith("|---") for line in terminal)


def test_a_missing_vllm_venv_is_skipped_with_the_command_that_builds_it(tmp_path: Path) -> None:
    python, why = engines.vllm_python(tmp_path)
    (tmp_path / ".venv-vllm").mkdir()
    (tmp_path / ".venv-vllm" / ".installed").touch()

    assert python is None and "`make vllm`" in why
    assert engines.vllm_python(tmp_path) == (tmp_path / ".venv-vllm" / "bin" / "python", "")


def test_the_part_rewrites_its_subsection_inside_the_overhead_section_and_nothing_else() -> None:
    doc = "# B\n\n## Pipeline overhead\n\nfigures\n\n### Target\n\n- PASS\n\n## Learning\n\ncurve\n"
    first = engines.subsection_markdown(_comparison(None, "absent"))
    second = engines.subsection_markdown(_comparison(_VLLM))

    added = replace_subsection(doc, report.SECTION, engines.SUBSECTION, first)
    again = replace_subsection(added, report.SECTION, engines.SUBSECTION, second)

    assert added == doc.replace("- PASS\n\n", "- PASS\n\n" + first + "\n")
    assert again == added.replace(first, second)
    assert again.endswith("## Learning\n\ncurve\n")


def test_the_config_is_the_cpu_builds_and_validates() -> None:
    config = engines.vllm_config(Path("/venv/bin/python"))

    assert config.engine.kind == "vllm" and config.engine.vllm.dtype == "float32"
    assert config.engine.vllm.kv_cache_gib == 0.5 and "--enforce-eager" in config.engine.vllm.extra_args
    # a chunked, seeded prefill kills vLLM 0.32's CPU worker: the 4k-token calls need one-piece prefill
    assert "--no-enable-chunked-prefill" in config.engine.vllm.extra_args
