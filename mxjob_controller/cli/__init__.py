"""The ``mxjob-controller`` command line (a click group; each subcommand lives in its own module)."""

from __future__ import annotations

import click

from mxjob_controller import __version__
from mxjob_controller.cli.local import local
from mxjob_controller.cli.run import run
from mxjob_controller.gc_policy import freeze_long_lived


@click.group(context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": "MXJOB"})
@click.version_option(__version__, "--version", prog_name="mxjob-controller")
def main() -> None:
    """Run distributed Apache MXNet training on Kubernetes as MXJob resources."""
    # Every subcommand is a long-running process holding large JSON caches: see gc_policy for why.
    freeze_long_lived()


main.add_command(local)
main.add_command(run)

__all__ = ["main"]
