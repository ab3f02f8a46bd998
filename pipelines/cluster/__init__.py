"""The experiment on a Kubernetes cluster with Argo Workflows, from Python or the CLI.

    from pipelines.cluster import server_from_env, deploy, submit, workflow_status
    config = load_config("my-experiment.yaml")
    server = server_from_env(config.cluster)    # ARGO_SERVER, ARGO_TOKEN or kubeconfig
    deploy(config, server)                      # WorkflowTemplate + CronWorkflow, created or updated
    run = submit(config, server)                # the bounded run; submit(..., once=True): one iteration
    workflow_status(run.name, server).phase     # Pending, Running, Succeeded, Failed, Error

docs/operations.md describes the cluster these talk to.
"""

from pipelines.cluster._connection import ArgoServer, ClusterError, server_from_env
from pipelines.cluster._operations import (
    Deployed,
    Submitted,
    WorkflowStatus,
    deploy,
    one_iteration_workflow,
    submit,
    workflow_status,
)

__all__ = [
    "ArgoServer",
    "ClusterError",
    "Deployed",
    "Submitted",
    "WorkflowStatus",
    "deploy",
    "one_iteration_workflow",
    "server_from_env",
    "submit",
    "workflow_status",
]
