"""The experiment on a Kubernetes cluster with Argo Workflows, from Python or the CLI.

    from pipelines.cluster import server_from_env, deploy, submit, workflow_status
    config = load_config("my-experiment.yaml")
    server = server_from_env(config.cluster)    # ARGO_SERVER, ARGO_TOKEN or kubeconfig
    deploy(config, server)                      # WorkflowTemplate + CronWorkflow, created or updated
    run = submit(config, server)                # the bounded run; submit(..., once=True): one iteration
    workflow_status(run.name, server).phase     # Pending, Running, Succeeded, Failed, Error

docs/operations.md describes the cluster these talk to. Exports load on first use
(``components.core.lazy``): ``openforge deploy --help`` need not load yaml and pydantic.
"""

from components.core.lazy import lazy_exports

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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ArgoServer": "pipelines.cluster._connection:ArgoServer",
        "ClusterError": "pipelines.cluster._connection:ClusterError",
        "server_from_env": "pipelines.cluster._connection:server_from_env",
        "Deployed": "pipelines.cluster._operations:Deployed",
        "Submitted": "pipelines.cluster._operations:Submitted",
        "WorkflowStatus": "pipelines.cluster._operations:WorkflowStatus",
        "deploy": "pipelines.cluster._operations:deploy",
        "one_iteration_workflow": "pipelines.cluster._operations:one_iteration_workflow",
        "submit": "pipelines.cluster._operations:submit",
        "workflow_status": "pipelines.cluster._operations:workflow_status",
    },
)
