"""The continuity benchmark's measurement, table and stored result, on hand-made figures (no harness, no engine)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from types import SimpleNamespace

from benchmarks import bench_continuity
from benchmarks.bench_continuity import _continuity, _real_row, _stored, section
from benchmarks.continuity.measure import Continuity
from benchmarks.doc_sections import replace_section
from components.core.trajectory import RecordedCall


def _call(
    index: int, prompt: list[int], completion: list[int], path: str = "tokens", forced_from: int | None = None
) -> RecordedCall:
    provenance = {"path": path} if path == "tokens" else {"path": "chat", "reason": "a first turn"}
    return RecordedCall(
        session_id="s", call_index=index, api="chat.completions", request={}, prompt_token_ids=prompt,
        completion_token_ids=completion, completion_logprobs=[-0.5] * len(completion),
        sampling={"temperature": 1.0}, started_at=0.0, latency_ms=1.0, upstream_status=200, provenance=provenance,
        forced_from=forced_from,
    )  # fmt: skip


def test_continued_calls_branches_and_sampled_tokens_are_counted_per_harness() -> None:
    calls = [
        _call(0, [1, 2, 3], [4, 5], path="chat"),
        _call(1, [1, 2, 3, 4, 5, 6], [7]),  # continues the row
        # The harness rewrote its history: a rewrite branch; the engine forced its last token.
        _call(2, [1, 2, 9, 4, 5, 6, 7, 8], [10, 11], forced_from=1),
    ]
    off, on = Continuity("openclaw", provenance=False), Continuity("openclaw", provenance=True)
    off.add("s", calls[:1] + [_call(1, [1, 2, 3, 40, 6], [7], path="chat")], temperature=1.0)
    on.add("s", calls, temperature=1.0)

    assert (on.continued, dict(on.branches), on.breaks, on.share) == (1, {"rewrite": 1}, 0, 0.5)
    assert (on.sampled_in_rows, on.sampled_recorded, on.token_path) == (4, 4, 2)  # the forced token in neither
    assert on.chat_reasons == {"a first turn": 1}
    row = _real_row(off, on, "plain", "ok 1 / ok 1")
    assert row.startswith("| openclaw | plain | 1 | 3 | 0% (0/1) | 50% (1/2) | rewrite 1 | 0 | 4 / 4 | 2 |")


def _measured(shape: str, provenance: bool, continued: int, reasons: dict[str, int]) -> Continuity:
    result = Continuity(shape, provenance, sessions=2, calls=8, continued=continued, breaks=6 - continued)
    result.chat_reasons.update(reasons)
    return result


def _raw() -> dict:
    off = _measured("codex", False, 3, {"a first turn": 2})
    on = _measured("codex", True, 6, {"a first turn": 2, "a rewrite": 2})
    run = {"policy": "plain", "off": _stored(off), "on": _stored(on), "statuses_off": ["ok", "ok"],
           "statuses_on": ["ok", "error"]}  # fmt: skip
    return json.loads(json.dumps({
        "command": bench_continuity.COMMAND, "date": "2026-12-07 23:10 UTC", "commit": "abc1234",
        "machine": "2 CPU cores", "load_before": [1.0, 1.5, 2.0], "load_after": [2.5, 2.0, 1.5],
        "sessions": 2, "rollouts": 2, "simulated": [{"off": _stored(off), "on": _stored(on)}], "real": [run],
        "skipped": ["openclaw"],
    }))  # fmt: skip


def test_the_section_is_rendered_from_the_stored_figures_alone() -> None:
    text = section(_raw())
    assert text.startswith(f"## {bench_continuity.SECTION}\n")
    assert "Date: 2026-12-07 23:10 UTC. Commit: abc1234." in text
    assert "Rendered from `benchmarks/results/continuity.json`." in text
    assert "| codex | 2 | 8 | 50% (3/6) | 100% (6/6) | 0 | a first turn (2); a rewrite (2) |" in text
    assert "| codex | plain | 2 | 8 | 50% (3/6) | 100% (6/6) | - | 0 |" in text
    assert text.count("| ok 2 / error 1, ok 1 |") == 1
    assert "Not installed, so not run: openclaw" in text


def test_a_stored_measurement_comes_back_with_its_counters() -> None:
    """JSON keeps the counters' keys and order (dataclasses.asdict would count their pairs instead)."""
    on = _measured("codex", True, 6, {"a first turn": 2, "a rewrite": 3})
    back = _continuity(json.loads(json.dumps(_stored(on))))
    assert back == on
    assert list(back.chat_reasons.most_common()) == [("a rewrite", 3), ("a first turn", 2)]
    on.branches["rewrite"] = 2
    assert _continuity(json.loads(json.dumps(_stored(on)))).branches == {"rewrite": 2}


def test_a_partial_run_stores_nothing_and_leaves_the_doc(monkeypatch, tmp_path: Path) -> None:
    result, doc = tmp_path / "continuity.json", tmp_path / "proxy.md"
    monkeypatch.setattr(bench_continuity, "RESULT", result)
    monkeypatch.setattr(bench_continuity, "DOC", doc)
    monkeypatch.setattr(bench_continuity, "_scripted_engine", lambda *a: contextlib.nullcontext(SimpleNamespace(url="")))
    monkeypatch.setattr(bench_continuity, "_simulated", lambda *a: _raw()["simulated"])
    monkeypatch.setattr(bench_continuity, "_real", lambda *a: _raw()["real"])
    for argv in (["--no-real"], ["--no-doc"]):
        assert bench_continuity.main(argv) == 0
        assert not result.exists() and not doc.exists()


def test_the_doc_section_is_the_stored_result_rendered() -> None:
    """Re-rendering benchmarks/results/continuity.json leaves docs/proxy.md as it is: a figure
    typed into the section, or a result stored without its rendering, fails here."""
    doc = bench_continuity.DOC.read_text()
    raw = json.loads(bench_continuity.RESULT.read_text())
    assert replace_section(doc, bench_continuity.SECTION, section(raw)) == doc
    assert f"Date: {raw['date']}. Commit: {raw['commit']}." in doc
