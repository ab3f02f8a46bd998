"""Deploy, submit and watch an experiment through the Argo Server API (Hera's WorkflowsService).

What is sent is exactly what ``compile_config`` compiled (and what the golden files and
the three checks cover): the documents go through Hera's models only to be serialised
into the API's request shapes. Every failure becomes a ``ClusterError`` that names the
server, the credentials used and what to change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from components.core.config import ExperimentConfig
from pipelines.cluster._connection import ArgoServer, ClusterError

_T = TypeVar("_T")
_TIMEOUT_S = 30.0
_UI_PATH = {"WorkflowTemplate": "workflow-templates", "CronWorkflow": "cron-workflows", "Workflow": "workflows"}


@dataclass(frozen=True)
class Deployed:
    kind: str
    name: str
    action: str  # "created" or "updated"
    link: str


@dataclass(frozen=True)
class Submitted:
    name: str
    link: str


@dataclass(frozen=True)
class WorkflowStatus:
    name: str
    phase: str
    progress: str | None
    started_at: str | None
    finished_at: str | None
    message: str | None
    link: str
    failed_nodes: list[tuple[str, str]] = field(default_factory=list)  # (display name, message)


def _service(server: ArgoServer) -> Any:
    import requests
    from hera.workflows import WorkflowsService

    class _Session(requests.Session):
        # Hera sets no timeout: an unresponsive server would hang the command for ever.
        def request(self, *args: Any, **kwargs: Any) -> Any:
            kwargs.setdefault("timeout", _TIMEOUT_S)
            return super().request(*args, **kwargs)

    return WorkflowsService(
        host=server.url, token=server.token, namespace=server.namespace, verify_ssl=server.verify_ssl, session=_Session()
    )


@contextmanager
def _explained(server: ArgoServer, action: str) -> Iterator[None]:
    """Turn transport and HTTP failures into a ClusterError that names the fix."""
    import requests
    from hera.exceptions import Forbidden, HeraException, Unauthorized

    try:
        yield
    except requests.exceptions.SSLError as exc:
        raise ClusterError(
            f"cannot {action}: TLS with the Argo Server at {server.url} failed ({exc.__class__.__name__}); for a "
            "self-signed certificate set ARGO_INSECURE_SKIP_VERIFY=true, for a plain-HTTP server ARGO_SECURE=false"
        ) from None
    except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as exc:
        raise ClusterError(
            f"cannot {action}: the Argo Server at {server.url} is unreachable ({exc.__class__.__name__}); check "
            "ARGO_SERVER and that the server runs (`kubectl -n argo get svc argo-server`; from outside the "
            "cluster: `kubectl -n argo port-forward svc/argo-server 2746:2746` and ARGO_SERVER=localhost:2746)"
        ) from None
    except Unauthorized:
        raise ClusterError(
            f"cannot {action}: the Argo Server at {server.url} refused the credentials ({server.token_source}, "
            f"HTTP 401); set ARGO_TOKEN to a valid token, e.g. ARGO_TOKEN=\"Bearer $(kubectl -n "
            f"{server.namespace} create token openforge-submitter)\""
        ) from None
    except Forbidden:
        raise ClusterError(
            f"cannot {action}: the token ({server.token_source}) is not allowed to in namespace "
            f"{server.namespace} (HTTP 403); use the openforge-submitter service account's token, or bind yours "
            "to the Role openforge-submitter (argo/cluster/rbac.yaml)"
        ) from None
    except HeraException as exc:
        raise ClusterError(f"cannot {action}: the Argo Server at {server.url} answered: {exc}") from None


def check_deployable(config: ExperimentConfig) -> None:
    """Refuse a config whose paths only exist on this machine: pods would not find them."""
    from urllib.parse import urlparse

    problems = []
    storage = urlparse(config.storage.uri)
    if storage.scheme != "s3" or storage.path.strip("/"):
        problems.append(
            f"storage.uri is {config.storage.uri!r}: on a cluster it must be s3://BUCKET with no prefix, the "
            "bucket of Argo's artifact repository (rollout artifacts are keyed from its root), e.g. s3://openforge"
        )
    if not config.tasks.source.startswith("s3://"):
        problems.append(f"tasks.source is {config.tasks.source!r}: upload the task set and give its s3:// prefix")
    if not config.tracking.uri.startswith(("http://", "https://")):
        problems.append(
            f"tracking.uri is {config.tracking.uri!r}: a local MLflow store in a pod is lost with the pod; "
            "give the tracking server's URL (argo/cluster runs one: http://mlflow.openforge.svc.cluster.local:5000)"
        )
    if problems:
        raise ClusterError(f"{config.name!r} cannot run on a cluster as configured:\n  " + "\n  ".join(problems))


def _not_found(call: Callable[[], _T]) -> _T | None:
    from hera.exceptions import NotFound

    try:
        return call()
    except NotFound:
        return None


def _create_or_update(service: Any, server: ArgoServer, doc: dict[str, Any]) -> Deployed:
    from hera.workflows import models as m

    kind, name = doc["kind"], doc["metadata"]["name"]
    if kind == "WorkflowTemplate":
        get, create, update = (
            service.get_workflow_template,
            lambda obj: service.create_workflow_template(m.WorkflowTemplateCreateRequest(template=obj)),
            lambda obj: service.update_workflow_template(name, m.WorkflowTemplateUpdateRequest(template=obj)),
        )
        model = m.WorkflowTemplate
    elif kind == "CronWorkflow":
        get, create, update = (
            service.get_cron_workflow,
            lambda obj: service.create_cron_workflow(m.CreateCronWorkflowRequest(cron_workflow=obj)),
            lambda obj: service.update_cron_workflow(name, m.UpdateCronWorkflowRequest(cron_workflow=obj)),
        )
        model = m.CronWorkflow
    else:
        raise ValueError(f"cannot deploy a {kind}; deploy takes WorkflowTemplates and CronWorkflows")
    obj = model.model_validate(doc)
    existing = _not_found(lambda: get(name))
    link = server.ui_link(_UI_PATH[kind], name)
    if existing is None:
        create(obj)
        return Deployed(kind, name, "created", link)
    # An update must name the version it replaces (optimistic concurrency).
    obj.metadata.resource_version = existing.metadata.resource_version
    update(obj)
    return Deployed(kind, name, "updated", link)


def deploy(config: ExperimentConfig, server: ArgoServer) -> list[Deployed]:
    """Create or update the iteration WorkflowTemplate, then the CronWorkflow that runs it."""
    from pipelines.compile import compile_config

    check_deployable(config)
    docs = [d for d in compile_config(config) if d["kind"] in ("WorkflowTemplate", "CronWorkflow")]
    service = _service(server)
    with _explained(server, f"deploy {config.name!r}"):
        return [_create_or_update(service, server, doc) for doc in docs]


def one_iteration_workflow(config: ExperimentConfig) -> dict[str, Any]:
    """The Workflow a scheduled run of the cron creates: the deployed template, iteration ``next``."""
    from pipelines.compile import compile_config, manifest_of_kind

    cron = manifest_of_kind(compile_config(config), "CronWorkflow")
    metadata = {
        "generateName": f"{config.name}-iteration-",
        "namespace": cron["metadata"]["namespace"],
        "labels": cron["metadata"]["labels"],
    }
    return {"apiVersion": cron["apiVersion"], "kind": "Workflow", "metadata": metadata, "spec": cron["spec"]["workflowSpec"]}


def submit(config: ExperimentConfig, server: ArgoServer, *, once: bool = False) -> Submitted:
    """Submit the bounded run (every iteration of the config), or with ``once`` the next iteration
    of the deployed template; returns the workflow's name and its Argo UI link."""
    from hera.workflows import models as m

    from pipelines.compile import compile_config, manifest_of_kind

    check_deployable(config)
    doc = one_iteration_workflow(config) if once else manifest_of_kind(compile_config(config), "Workflow")
    service = _service(server)
    with _explained(server, f"submit {config.name!r}"):
        created = service.create_workflow(m.WorkflowCreateRequest(workflow=m.Workflow.model_validate(doc)))
    name = created.metadata.name
    return Submitted(name=name, link=server.ui_link("workflows", name))


def workflow_status(name: str, server: ArgoServer) -> WorkflowStatus:
    """Where a submitted workflow stands, with the message of every failed node."""
    service = _service(server)
    with _explained(server, f"read workflow {name!r}"):
        workflow = service.get_workflow(name)
    status = workflow.status
    nodes = (status.nodes if status is not None else None) or {}
    failed = sorted(
        (node.display_name or node_id, node.message or "")
        for node_id, node in nodes.items()
        if node.phase in ("Failed", "Error") and node.type == "Pod"
    )
    return WorkflowStatus(
        name=name,
        phase=(status.phase if status is not None else None) or "Pending",
        progress=status.progress if status is not None else None,
        started_at=_time(status.started_at) if status is not None else None,
        finished_at=_time(status.finished_at) if status is not None else None,
        message=status.message if status is not None else None,
        link=server.ui_link("workflows", name),
        failed_nodes=failed,
    )


def _time(value: Any) -> str | None:
    # Hera wraps Kubernetes times in a root model.
    return None if value is None else str(getattr(value, "root", getattr(value, "__root__", value)))
