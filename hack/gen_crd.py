"""Write the MXJob CRD files from the API definition (``make crd``); ``--check`` only reports drift.

The logic lives in ``mxjob_controller/api/crd.py``; this script only writes (or compares) the files.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from mxjob_controller.api.crd import minified_size, mxjob_crd, rendered_files

ROOT = Path(__file__).resolve().parent.parent


@click.command()
@click.option("--check", is_flag=True, help="Do not write; exit 1 when a committed file differs.")
def main(check: bool) -> None:
    stale = []
    for rel, content in rendered_files().items():
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
    click.echo(f"MXJob CRD: {minified_size(mxjob_crd())} bytes as minified JSON")
    if check and stale:
        sys.exit(1)


if __name__ == "__main__":
    main()
