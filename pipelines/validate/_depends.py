"""Argo's ``depends`` expressions: ``prepare && (serve.Succeeded || serve.Daemoned)``.

Grammar: expr := term ("||" term)* ; term := factor ("&&" factor)* ;
factor := "!" factor | "(" expr ")" | TASK ["." RESULT].
"""

from __future__ import annotations

import re
from typing import NamedTuple

RESULTS = frozenset(
    {"Succeeded", "Failed", "Errored", "Skipped", "Omitted", "Daemoned", "AnySucceeded", "AllFailed"}
)
_TOKEN = re.compile(r"\s*(&&|\|\||!|\(|\)|[A-Za-z0-9_][-A-Za-z0-9_]*(?:\.[A-Za-z]+)?)")


class DependsError(ValueError):
    """An expression that does not parse; the message points at the offending token."""


class DependsRef(NamedTuple):
    task: str
    result: str | None  # None: the bare task name (Succeeded, Skipped or Daemoned)


def _tokenize(expr: str) -> list[str]:
    tokens, pos = [], 0
    while pos < len(expr.rstrip()):
        match = _TOKEN.match(expr, pos)
        if not match:
            raise DependsError(f"unexpected {expr[pos:].strip()[:20]!r} at position {pos}")
        tokens.append(match.group(1))
        pos = match.end()
    return tokens


class _Parser:
    def __init__(self, expr: str) -> None:
        self.expr = expr
        self.tokens = _tokenize(expr)
        self.pos = 0
        self.refs: list[DependsRef] = []

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _take(self) -> str:
        token = self._peek()
        if token is None:
            raise DependsError(f"{self.expr!r} ends too early: a task name or '(' is missing")
        self.pos += 1
        return token

    def parse(self) -> list[DependsRef]:
        self._expr()
        if self._peek() is not None:
            raise DependsError(f"unexpected {self._peek()!r} in {self.expr!r}")
        return self.refs

    def _expr(self) -> None:
        self._term()
        while self._peek() == "||":
            self._take()
            self._term()

    def _term(self) -> None:
        self._factor()
        while self._peek() == "&&":
            self._take()
            self._factor()

    def _factor(self) -> None:
        token = self._take()
        if token == "!":
            self._factor()
        elif token == "(":
            self._expr()
            if self._peek() != ")":
                raise DependsError(f"missing ')' in {self.expr!r}")
            self._take()
        elif token in ("&&", "||", ")"):
            raise DependsError(f"unexpected {token!r} in {self.expr!r}: a task name was expected")
        else:
            task, _, result = token.partition(".")
            if result and result not in RESULTS:
                raise DependsError(f"{token!r}: unknown task result {result!r}; use one of {sorted(RESULTS)}")
            self.refs.append(DependsRef(task, result or None))


def parse_depends(expr: str) -> list[DependsRef]:
    """The task references in ``expr``, in order; raises DependsError when it does not parse."""
    if not expr.strip():
        raise DependsError("empty depends expression")
    return _Parser(expr).parse()
