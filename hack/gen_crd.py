"""Write every framework's CRD files (MXJob, TFJob, GenericJob) from their API definitions, and the webhook
component's configurations (``make crd``); ``--check`` only reports drift.

The logic lives in ``mxjob_controller/kubeflow_api/crd.py`` (what every kind shares), each framework's ``crd.py``
(``mxnet/``, ``tensorflow/``, ``generic/``) and the table of ``mxjob_controller/frameworks.py``; this script only
writes (or compares) the files.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from mxjob_controller.frameworks import FRAMEWORKS, crd_files
from mxjob_controller.kubeflow_api.crd import minified_size
from mxjob_controller.webhooks.configuration import component_files

ROOT = Path(__file__).resolve().parent.parent


@click.command()
@click.option("--check", is_flag=True, help="Do not write; exit 1 when a committed file differs.")
def main(check: bool) -> None:
    stale = []
    for rel, content in {**crd_files(), **component_files()}.items():
        path = ROOT / rel
        current = path.read_text() if path.exists() else None
        if current == content:
            continue
        stale.append(rel)
        if not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
    verb = "out of date" if check else "written"
    for rel in stale:
        click.echo(f"{verb}: {rel}")
    for entry in FRAMEWORKS.values():
        click.echo(f"{entry.kind} CRD: {minified_size(entry.crd())} bytes as minified JSON")
    if check and stale:
        sys.exit(1)


if __name__ == "__main__":
    main()
