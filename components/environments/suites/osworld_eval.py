"""OSWorld's ``evaluator`` as a local verifier's goal: the metrics that need no VM, and a refusal for the rest.

OSWorld judges a task with metric functions (``func``) applied to what getters fetch from
the VM (``result``) and to the gold (``expected``), and, for a list of funcs, ``conj``
(``and``: every one 1.0; ``or``: any). Three common metrics need nothing but files and
command output, and run offline in ``osworld_verify.py`` (copied in as ``verify.py``):

| func | result | expected | passes when |
|---|---|---|---|
| ``exact_match`` | ``vm_file`` (its text) or ``vm_command_line`` (its stdout) | ``rule``: ``{"expected": "..."}`` | equal |
| ``compare_text_file`` | ``vm_file`` | ``cloud_file``, a local file shipped beside the task JSON | equal texts (options ``ignore_blanks``, ``ignore_case``) |
| ``check_include_exclude`` | ``vm_file`` or ``vm_command_line`` | ``rule``: ``{"include": [...], "exclude": [...]}`` | every include is in it, no exclude is |

A VM path is a workspace path (``/home/user/x`` is ``x``; osworld_vm.py). Every other func
reads the state of an application in the VM (Chrome's profile, LibreOffice documents,
VLC's settings, ...) or a screenshot, and is refused when the task is loaded, naming the
supported ones; so are ``postconfig`` steps (actions in the VM before judging).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from components.environments.suites.common import SuiteError, local_file, parse
from components.environments.suites.osworld_vm import local_argv, workspace_path

SUPPORTED = ("exact_match", "compare_text_file", "check_include_exclude")
EXPECTED_DIR = "expected"  # in the task folder, beside verify.py: out of the agent's reach
_WHY = {
    "infeasible": "it expects the agent to declare the task infeasible (OSWorld's FAIL action)",
}
_WHY_DEFAULT = (
    "not implemented here: OSWorld's other metrics mostly read application state in its VM "
    "(Chrome's profile, LibreOffice documents, app settings) or screenshots"
)


class _Getter(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class VmFile(_Getter):
    type: Literal["vm_file"]
    path: str
    dest: str | None = None  # OSWorld's name for its local copy; no copy is made here


class VmCommand(_Getter):
    type: Literal["vm_command_line"]
    command: list[str] | str
    shell: bool = False


class CloudFile(_Getter):
    type: Literal["cloud_file"]
    path: str = Field(description="Offline: a file beside the task JSON (a relative path or file:// URL).")
    dest: str = Field(pattern=r"^[^/\\]+$", description="The gold file's name.")


class Rule(_Getter):
    type: Literal["rule"]
    rules: dict[str, Any]


Getter = Annotated[VmFile | VmCommand | CloudFile | Rule, Field(discriminator="type")]


class Evaluator(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    func: str | list[str]
    result: Getter | list[Getter] | None = None
    expected: Getter | list[Getter] | None = None
    options: dict[str, Any] | list[dict[str, Any]] = Field(default_factory=dict)
    conj: Literal["and", "or"] = "and"
    postconfig: list[Any] = Field(default_factory=list, description="Refused unless empty: actions in the VM.")


class _TextOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ignore_blanks: bool = False
    ignore_case: bool = False


class _ExactRule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    expected: str


class _IncludeRule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)


def evaluator_goal(raw: Any, where: str, base: Path) -> tuple[dict, dict[str, Path]]:
    """The verifier's ``goal.json`` and the gold files to copy in (task-folder path -> source)."""
    where = f"{where}: evaluator"
    funcs = raw.get("func") if isinstance(raw, dict) else None
    for func in funcs if isinstance(funcs, list) else [funcs]:
        if func not in SUPPORTED:
            raise SuiteError(
                f"{where}.func: {func!r} is not supported offline ({_WHY.get(func, _WHY_DEFAULT)}); "
                f"supported: {', '.join(SUPPORTED)} (docs/tasks.md, \"Benchmark suites\")"
            )
    evaluator = parse(Evaluator, raw, where, "fields: func, result, expected, options, conj, postconfig")
    if evaluator.postconfig:
        raise SuiteError(
            f"{where}.postconfig: actions in the VM before judging (saving a file, closing a window) are not "
            "supported: the verifier judges the workspace as the agent left it; remove it or leave the task out"
        )
    if isinstance(evaluator.func, str):
        rows = [(evaluator.func, evaluator.result, evaluator.expected, evaluator.options)]
    else:
        columns = (evaluator.result, evaluator.expected, evaluator.options or [{}] * len(evaluator.func))
        if not all(isinstance(column, list) and len(column) == len(evaluator.func) for column in columns):
            raise SuiteError(f"{where}: a list of funcs needs lists of result, expected and options of its length")
        rows = list(zip(evaluator.func, *columns))
    checks, gold = [], {}
    for i, (func, result, expected, options) in enumerate(rows):
        check_where = f"{where} check {i} ({func})"
        check = {"func": func, "result": _result(result, check_where)}
        if func == "compare_text_file":
            if not isinstance(expected, CloudFile):
                raise SuiteError(f"{check_where}: expected must be a cloud_file (the gold file) for {func}")
            name = f"{EXPECTED_DIR}/{expected.dest}"
            if name in gold:
                raise SuiteError(f"{check_where}: two gold files named {expected.dest!r}; give them distinct dest")
            gold[name] = local_file(expected.path, base, f"{check_where}: expected.path")
            check["expected"] = {"file": name}
            text_options = parse(_TextOptions, options, f"{check_where}: options", "fields: ignore_blanks, ignore_case")
            check["options"] = text_options.model_dump()
        else:
            if options:
                raise SuiteError(f"{check_where}: options {sorted(options)} are not supported; remove them")
            if not isinstance(expected, Rule):
                raise SuiteError(f"{check_where}: expected must be a rule for {func}")
            rule_model = _ExactRule if func == "exact_match" else _IncludeRule
            hint = f"fields: {', '.join(rule_model.model_fields)}"
            check["expected"] = parse(rule_model, expected.rules, f"{check_where}: expected.rules", hint).model_dump()
        checks.append(check)
    return {"conj": evaluator.conj, "checks": checks}, gold


def _result(result: Any, where: str) -> dict:
    if isinstance(result, VmFile):
        return {"file": workspace_path(result.path, f"{where}: result.path")}
    if isinstance(result, VmCommand):
        return {"command": local_argv(result.command, result.shell, f"{where}: result.command")}
    raise SuiteError(f"{where}: result must be a vm_file or a vm_command_line, not {getattr(result, 'type', result)!r}")
