"""The ``mxjob-controller`` command line (a click group; each subcommand lives in its own module).

Subcommands are imported when invoked: the in-cluster ``run`` never loads the embedded cluster behind ``local``
(half a second of start-up and its modules' memory). The controller image leaves the embedded cluster out
(``.dockerignore``); there ``local`` says so instead of failing on an import."""

from __future__ import annotations

import importlib
import importlib.util

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
            module = _SUBCOMMANDS[cmd_name]
            if importlib.util.find_spec(module) is None:
                return _not_installed(cmd_name, module)
            self.add_command(getattr(importlib.import_module(module), cmd_name))
        return super().get_command(ctx, cmd_name)


def _not_installed(name: str, module: str) -> click.Command:
    """A stand-in for a subcommand whose module this installation leaves out (the image has no embedded cluster)."""

    @click.command(name, context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                                           "help_option_names": []},
                   help=f"Not in this installation ({module} is left out).")
    def missing() -> None:
        raise click.UsageError(f"'{name}' is not part of this installation: {module} is left out here (the "
                               "controller image carries the operator only). Install the mxjob-controller package "
                               "(pip install mxjob-controller, or make venv in a checkout) to use it.")

    return missing


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": "MXJOB"})
@click.version_option(__version__, "--version", prog_name="mxjob-controller")
def main() -> None:
    """Run distributed Apache MXNet training on Kubernetes as MXJob resources."""
    # Every subcommand is a long-running process holding large JSON caches: see gc_policy for why.
    freeze_long_lived()


__all__ = ["main"]
