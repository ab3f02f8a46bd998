"""Every iteration step's run leaves a cost record (components/costs), however it ends.

The step command runs each body through ``run_step``. It lives in the step, not in the
executor: on Argo each step is its own pod and writes its record to the store itself,
as it writes its other keys; the rollout pod, which holds no store, leaves its record in
the folder its spec's ``cost_dir`` flag names, for the executor to upload as an
artifact. The serve daemon's body returns when it is stopped (SIGTERM ends its engine),
so its record covers the whole time it served. A record that cannot be written is a
warning on stderr, never the step's failure; ``openforge report`` counts the runs
missing one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from components.costs.meter import CostMeter
    from pipelines.steps._spec import StepSpec

COST_FILE = "cost.json"
ITERATION_FLAG = "iteration"


def run_step(spec: StepSpec, flags: dict[str, Any]) -> None:
    """The spec's body on ``flags``; an iteration step's run is metered and recorded."""
    if ITERATION_FLAG not in {flag.name for flag in spec.flags}:
        spec.run(**flags)  # the workflow's exit hook belongs to no iteration
        return
    from components.costs.meter import CostMeter

    meter, resolved, code = CostMeter.start(), None, 0
    try:
        resolved = spec.run(**flags)
    except BaseException as exc:
        code = _exit_code(exc)
        raise
    finally:
        _record(spec, flags, resolved, meter, code)


def _exit_code(exc: BaseException) -> int:
    """The code the process exits with: typer.Exit carries ``exit_code``, SystemExit ``code``."""
    if isinstance(exc, SystemExit):
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    code = getattr(exc, "exit_code", None)
    return code if isinstance(code, int) else 1


def _record(spec: StepSpec, flags: dict[str, Any], resolved: object, meter: CostMeter, code: int) -> None:
    try:
        _write(spec, flags, resolved, meter, code)
    except Exception as exc:  # noqa: BLE001 - a lost record costs the report a line, never the step
        typer.echo(f"warning: {spec.name} wrote no cost record ({type(exc).__name__}: {exc}); "
                   "`openforge report` counts it as missing", err=True)  # fmt: skip


def _write(spec: StepSpec, flags: dict[str, Any], resolved: object, meter: CostMeter, code: int) -> None:
    from components.core.config import config_from_env
    from components.core.storage import open_store, run_layout
    from components.costs.keys import cost_record_key
    from components.costs.record import held_gpus

    # prepare's --iteration may be `next`: its body returns the number it resolved.
    iteration = resolved if isinstance(resolved, int) else _iteration_number(flags[ITERATION_FLAG])
    part = str(flags[spec.cost_part]) if spec.cost_part else None
    config = config_from_env()
    record = meter.finish(spec.name, iteration, part, held_gpus(config, spec.name), code)
    data = (json.dumps(record.model_dump(), indent=2) + "\n").encode()
    if spec.cost_dir:
        folder = Path(flags[spec.cost_dir])
        folder.mkdir(parents=True, exist_ok=True)
        (folder / COST_FILE).write_bytes(data)
        return
    store = open_store(config.storage.uri, config.storage.endpoint_url)
    store.put_bytes(cost_record_key(run_layout(config), iteration, spec.name, part), data)


def _iteration_number(value: object) -> int:
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        raise ValueError(f"the step ended before it resolved --iteration {value!r} to a number") from None
