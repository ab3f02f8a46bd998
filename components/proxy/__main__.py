"""``python -m components.proxy``: the proxy alone, for images that carry only this component."""

import typer

from components.proxy.cli import proxy_command

typer.run(proxy_command)
