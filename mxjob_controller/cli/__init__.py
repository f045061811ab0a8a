"""The ``mxjob-controller`` command line (a click group; each subcommand lives in its own module).

Subcommands are imported when invoked: the in-cluster ``run`` never loads the embedded cluster behind ``local``
(half a second of start-up and its modules' memory)."""

from __future__ import annotations

import importlib

import click

from mxjob_controller import __version__
from mxjob_controller.gc_policy import freeze_long_lived

_SUBCOMMANDS = {"local": "mxjob_controller.cli.local", "run": "mxjob_controller.cli.run"}


class _LazyGroup(click.Group):
    """A group whose subcommands (``_SUBCOMMANDS``: name → module holding a command of that name) are imported
    only when one is looked up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_SUBCOMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in _SUBCOMMANDS:
            self.add_command(getattr(importlib.import_module(_SUBCOMMANDS[cmd_name]), cmd_name))
        return super().get_command(ctx, cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": "MXJOB"})
@click.version_option(__version__, "--version", prog_name="mxjob-controller")
def main() -> None:
    """Run distributed Apache MXNet training on Kubernetes as MXJob resources."""
    # Every subcommand is a long-running process holding large JSON caches: see gc_policy for why.
    freeze_long_lived()


__all__ = ["main"]
