"""One way to turn a pydantic ValidationError into lines a person can act on."""

from __future__ import annotations

from pydantic import ValidationError


def describe_errors(exc: ValidationError, unknown_field_hint: str = "misspelled?") -> list[tuple[str, str]]:
    """``(dotted field, message)`` per problem; unknown and missing fields get plain words."""
    problems = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "<top level>"
        if err["type"] == "extra_forbidden":
            message = f"unknown field ({unknown_field_hint})"
        elif err["type"] == "missing":
            message = "required field is missing"
        else:
            message = err["msg"].removeprefix("Value error, ")
        problems.append((field, message))
    return problems


def join_errors(exc: ValidationError, unknown_field_hint: str = "misspelled?") -> str:
    """The problems on one line, ``field: message; field: message``."""
    return "; ".join(f"{field}: {message}" for field, message in describe_errors(exc, unknown_field_hint))
