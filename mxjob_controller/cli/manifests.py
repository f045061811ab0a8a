"""The manifests ``local run`` is given: files (YAML or JSON, several documents each, ``-`` for standard input, a
``List`` unpacked) and directories (their manifests), read into objects, each with the file it came from; anything
else is a usage error (exit 2) naming the file."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click
import yaml

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def expand(files: tuple[str, ...]) -> list[str]:
    """FILES with each directory replaced by its manifests (``.yaml``, ``.yml``, ``.json``, sorted by name; not
    its sub-directories, as ``kubectl create -f DIR``); a usage error for a directory with none."""
    out: list[str] = []
    for name in files:
        if name != "-" and os.path.isdir(name):
            found = sorted(str(p) for p in Path(name).iterdir() if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
            if not found:
                raise click.BadParameter(f"{name}: a directory with no .yaml, .yml or .json file", param_hint="FILES")
            out.extend(found)
        else:
            out.append(name)
    return out


def read_documents(files: list[str]) -> tuple[list[str], list[dict]]:
    """Every object in ``files`` (YAML or JSON; ``-`` is standard input; a ``List`` is unpacked), with the file each
    came from; a usage error naming the file for anything else."""
    docs: list[dict] = []
    sources: list[str] = []
    for name in files:
        try:
            text = sys.stdin.read() if name == "-" else Path(name).read_text()
            loaded = [d for d in yaml.safe_load_all(text) if d is not None]
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
            raise click.BadParameter(f"{name}: {e}", param_hint="FILES") from None
        for doc in loaded:
            items = doc.get("items") if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") else None
            for obj in items if isinstance(items, list) else [doc]:
                if not isinstance(obj, dict) or not obj.get("kind") or not obj.get("apiVersion"):
                    raise click.BadParameter(f"{name}: every document must be an object with apiVersion and kind",
                                             param_hint="FILES")
                docs.append(obj)
                sources.append("standard input" if name == "-" else name)
    return sources, docs
