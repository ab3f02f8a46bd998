"""Where the Argo Server is and how to authenticate to it: environment first, then kubeconfig.

The variables are the ones the `argo` CLI reads, so a shell set up for `argo` works as is:
``ARGO_SERVER`` (``host:port`` or a URL), ``ARGO_SECURE`` (``false``: plain HTTP),
``ARGO_INSECURE_SKIP_VERIFY`` (``true``: accept a self-signed certificate), ``ARGO_TOKEN``
(``Bearer ...`` or the bare token). Without ``ARGO_TOKEN`` the token of the kubeconfig's
current user is used (``KUBECONFIG`` or ``~/.kube/config``), when that user has one. The
config's ``cluster.argo_server`` is the fallback address; the namespace is always the
config's ``cluster.namespace``, the one the compiled manifests name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from components.core.cluster_config import ClusterConfig


class ClusterError(RuntimeError):
    """A cluster operation that failed; the message says what to change."""


@dataclass(frozen=True)
class ArgoServer:
    """One Argo Server and the credentials to use with it."""

    url: str
    namespace: str
    token: str | None = None
    token_source: str = "no token"
    verify_ssl: bool = True

    def ui_link(self, kind_path: str, name: str) -> str:
        """The Argo UI page of an object: ``workflows``, ``workflow-templates`` or ``cron-workflows``."""
        return f"{self.url}{kind_path}/{self.namespace}/{name}"


def _url(raw: str, env: Mapping[str, str]) -> str:
    if "://" not in raw:
        secure = env.get("ARGO_SECURE", "true").lower() != "false"
        raw = f"{'https' if secure else 'http'}://{raw}"
    # Hera joins API paths onto the URL: without the slash a base path would be cut off.
    return raw.rstrip("/") + "/"


def _kubeconfig_token(env: Mapping[str, str]) -> tuple[str | None, str]:
    """The current kubeconfig user's bearer token (``token`` or ``tokenFile``), and where it came from."""
    paths = env.get("KUBECONFIG", "").split(os.pathsep) if env.get("KUBECONFIG") else []
    path = Path(next((p for p in paths if p), str(Path(env.get("HOME", "~")).expanduser() / ".kube" / "config")))
    try:
        kubeconfig: Any = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return None, "no token (no readable kubeconfig)"
    contexts = {c.get("name"): c.get("context") or {} for c in kubeconfig.get("contexts") or []}
    user_name = contexts.get(kubeconfig.get("current-context"), {}).get("user")
    user = next((u.get("user") or {} for u in kubeconfig.get("users") or [] if u.get("name") == user_name), {})
    if user.get("token"):
        return str(user["token"]), f"kubeconfig {path} (user {user_name})"
    if user.get("tokenFile"):
        try:
            return Path(user["tokenFile"]).read_text().strip(), f"kubeconfig {path} (user {user_name}, tokenFile)"
        except OSError:
            return None, f"no token (kubeconfig user {user_name}'s tokenFile cannot be read)"
    return None, f"no token (kubeconfig user {user_name!r} has none: exec plugins and client certificates do not reach the Argo Server)"


def server_from_env(cluster: ClusterConfig, env: Mapping[str, str] | None = None) -> ArgoServer:
    """The Argo Server for a config's ``cluster`` section, from the environment (``os.environ`` by default)."""
    env = os.environ if env is None else env
    raw = env.get("ARGO_SERVER") or cluster.argo_server
    if not raw:
        raise ClusterError(
            "no Argo Server to talk to: set ARGO_SERVER (e.g. ARGO_SERVER=localhost:2746 after "
            "`kubectl -n argo port-forward svc/argo-server 2746:2746`) or cluster.argo_server in the config"
        )
    if env.get("ARGO_TOKEN"):
        token, source = env["ARGO_TOKEN"], "ARGO_TOKEN"
    else:
        token, source = _kubeconfig_token(env)
    return ArgoServer(
        url=_url(raw, env),
        namespace=cluster.namespace,
        token=token,
        token_source=source,
        verify_ssl=env.get("ARGO_INSECURE_SKIP_VERIFY", "false").lower() != "true",
    )
