"""`openforge sft`'s workflow: one WorkflowTemplate, ``<name>-sft``, whose one step fine-tunes.

    sft   (the train image, the train step's resources, the GPU semaphore)

On a cluster, ``openforge sft CONFIG --compile-only`` writes it for ``argo template create``,
and ``argo submit --from workflowtemplate/<name>-sft`` runs it; on this machine ``openforge
sft CONFIG`` runs the same document through the local executor. It holds the experiment's
mutex, so it never runs beside the experiment's own iterations (whose first one serves its
checkpoint), and it has no exit hook: that records how *training* workflows ended.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from hera.workflows import WorkflowTemplate

from components.core.config import ExperimentConfig
from pipelines.iteration import config_parameter, storage_step, workflow_settings

if TYPE_CHECKING:
    from rich.console import Console

    from components.trainer.sft import SftReport

ENTRYPOINT = "sft"
_WORKFLOW = "sft"  # the local executor's folder and lock name for it, under executor_folder


def sft_template_name(config: ExperimentConfig) -> str:
    return f"{config.name}-{ENTRYPOINT}"


def build_sft_template(config: ExperimentConfig) -> WorkflowTemplate:
    """The SFT WorkflowTemplate of a config with an ``sft:`` section."""
    if config.sft is None:
        raise ValueError("build_sft_template needs a config with an `sft:` section")
    settings = workflow_settings(config)
    settings.pop("on_exit")
    return WorkflowTemplate(
        name=sft_template_name(config),
        entrypoint=ENTRYPOINT,
        arguments=[config_parameter(config)],
        templates=[storage_step(config, ENTRYPOINT, sized_as="train")],
        **settings,
    )


def compile_sft(config: ExperimentConfig) -> dict:
    """The template as the manifest dict the compiler writes and the local executor runs."""
    from pipelines.compile import manifest_dict

    return manifest_dict(build_sft_template(config))


def run_sft_locally(config: ExperimentConfig, console: Console, *, workdir: Path, warm_start: bool) -> tuple[SftReport, bool]:
    """Run the template through the local executor; the report it committed, and whether it was committed before."""
    from components.core.storage import RunLayout, open_store
    from components.trainer.sft import SftReport
    from pipelines.executor import execute_workflow
    from pipelines.iteration import config_yaml
    from pipelines.run import RunError, executor_folder, local_executor
    from pipelines.run_view import RunView

    store, layout = open_store(config.storage.uri, config.storage.endpoint_url), RunLayout(config.name)
    done_before = store.exists(layout.sft_marker())
    # No model-written command runs in it: its one step is a process, as train is.
    with (
        local_executor(config, workdir, None, warm_start, "process", needs_harness=False, workflow=_WORKFLOW) as options,
        RunView(console) as view,
    ):
        execute_workflow(
            [compile_sft(config)],
            parameters={"config": config_yaml(config)},
            store=store,
            workdir=executor_folder(workdir, config) / _WORKFLOW,
            options=options(lambda _task: None),
            observer=view.observe,
        )
    if not store.exists(layout.sft_report()):
        raise RunError(f"the SFT workflow finished without a report ({store.root}/{layout.sft_report()}); see its log")
    return SftReport.model_validate_json(store.get_bytes(layout.sft_report())), done_before
