"""Argo `depends` expressions: the task references in them, and clear errors when they do not parse."""

from __future__ import annotations

import pytest

from pipelines.validate import DependsError, DependsRef, parse_depends


def test_references_are_listed_with_their_results() -> None:
    refs = parse_depends("prepare && (serve.Daemoned || !rollout-1.Failed)")
    assert refs == [DependsRef("prepare", None), DependsRef("serve", "Daemoned"), DependsRef("rollout-1", "Failed")]


@pytest.mark.parametrize(
    ("expr", "words"),
    [
        ("", "empty"),
        ("a &&", "ends too early"),
        ("a b", "unexpected 'b'"),
        ("(a || b", "missing ')'"),
        ("a && || b", "a task name was expected"),
        ("a.Done", "unknown task result 'Done'"),
        ("a & b", "unexpected '& b'"),
    ],
)
def test_malformed_expressions_are_refused_with_the_reason(expr: str, words: str) -> None:
    with pytest.raises(DependsError, match=words.replace("(", r"\(").replace(")", r"\)").replace("|", r"\|")):
        parse_depends(expr)
