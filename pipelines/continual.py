"""Training beyond one iteration: a CronWorkflow for continual training and a bounded Workflow.

- The CronWorkflow references the deployed iteration WorkflowTemplate and runs it with
  ``iteration=next`` on every schedule: each run reads the run's state from the store,
  does the first uncommitted iteration and commits the next state last. A run that fails
  or is stopped leaves the state as it was, so the next scheduled run resumes it;
  ``concurrencyPolicy: Forbid`` (and the experiment's mutex) keep two runs from overlapping.
- The bounded Workflow runs iterations 0 .. ``config.iterations - 1`` in a chain, each one
  the iteration template's DAG with its number; it carries its own copy of the templates,
  so it runs without anything deployed, and resubmitting it skips committed iterations.
"""

from __future__ import annotations

from hera.workflows import DAG, CronWorkflow, Parameter, Task, Workflow
from hera.workflows import models as m

from components.core.config import ExperimentConfig
from pipelines.iteration import ENTRYPOINT, config_parameter, iteration_templates, template_name, workflow_settings
from pipelines.steps.prepare import NEXT, STOP_AT

BOUNDED_ENTRYPOINT = "iterations"
# Argo appends an 11-character timestamp to a CronWorkflow's name for each run (63 - 11).
CRON_NAME_LIMIT = 52


def cron_name(config: ExperimentConfig) -> str:
    return f"{config.name}-continual"


def build_cron_workflow(config: ExperimentConfig) -> CronWorkflow:
    """One iteration (the next uncommitted one) per scheduled run, never two at once."""
    cron = config.cluster.cron
    settings = workflow_settings(config)
    return CronWorkflow(
        name=cron_name(config),
        namespace=settings["namespace"],
        labels=settings["labels"],
        schedules=list(cron.schedules),
        timezone=cron.timezone,
        concurrency_policy="Forbid",
        starting_deadline_seconds=cron.starting_deadline_s,
        successful_jobs_history_limit=cron.history_limit,
        failed_jobs_history_limit=cron.history_limit,
        cron_suspend=cron.suspend or None,
        workflow_template_ref=m.WorkflowTemplateRef(name=template_name(config)),
        arguments=[Parameter(name="iteration", value=NEXT)],
    )


def build_bounded_workflow(config: ExperimentConfig) -> Workflow:
    """Iterations 0 .. iterations-1, each after the previous one committed."""
    tasks = [
        Task(
            name=f"iteration-{k}",
            template=ENTRYPOINT,
            depends=f"iteration-{k - 1}" if k else None,
            # Overlapped iterations: the last one samples nothing ahead that no iteration would train.
            arguments=[Parameter(name="iteration", value=str(k)), Parameter(name=STOP_AT, value=str(config.iterations))],
        )
        for k in range(config.iterations)
    ]
    return Workflow(
        generate_name=f"{config.name}-train-",
        entrypoint=BOUNDED_ENTRYPOINT,
        arguments=[config_parameter(config)],
        templates=[DAG(name=BOUNDED_ENTRYPOINT, tasks=tasks), *iteration_templates(config)],
        **workflow_settings(config),
    )
