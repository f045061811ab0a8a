"""Generate ``mxjob_controller/local/apiserver/encoding/kubeproto_tables.py`` from Kubernetes' own protobuf definitions
(``make protobuf``); ``--check`` only reports drift.

The inputs are the published ``generated.proto`` files of ``k8s.io/api``, ``k8s.io/apimachinery``,
``k8s.io/apiextensions-apiserver`` (CustomResourceDefinition) and ``k8s.io/kube-aggregator`` (APIService) at the tags
below (kube 1.32), read from git clones of those repositories (``--api-git``, ``--apimachinery-git``,
``--apiextensions-git``, ``--aggregator-git``). Each ``.proto`` gives a message's field numbers, types, and whether
a field is repeated or a map. Whether a zero value on the wire is part of the object's JSON (a pointer, or a field
without ``omitempty``) and whether a field is ``inline`` in JSON is not in the ``.proto``: it comes from the
``json:`` and ``protobuf:`` tags of the same
package's Go types, matched by field number.

The table: ``MESSAGES[message] = ((number, json name, type, flags), ...)``, ``type`` a scalar (``string``,
``int32``...) or a fully qualified message name (``"key value"`` for a map); flags: ``r`` repeated, ``m`` map,
``k`` a zero value is kept (pointer or no omitempty), ``i`` inline in JSON. ``LISTS``: messages whose JSON is
the array of their field 1 (Go slice types such as ``ExtraValue``). ``API_VERSIONS``: apiVersion → package.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "mxjob_controller" / "local" / "apiserver" / "encoding" / "kubeproto_tables.py"
API_TAG = APIMACHINERY_TAG = APIEXTENSIONS_TAG = AGGREGATOR_TAG = "v0.32.9"
DEFAULT_API_GIT = "/work/.mirror/kubernetes+api/repo"
DEFAULT_APIMACHINERY_GIT = "/work/.mirror/kubernetes+apimachinery/repo"
DEFAULT_APIEXTENSIONS_GIT = "/work/.mirror/kubernetes+apiextensions-apiserver/repo"
DEFAULT_AGGREGATOR_GIT = "/work/.mirror/kubernetes+kube-aggregator/repo"

#: (repository, directory, apiVersion it serves or None)
PACKAGES = (
    ("api", "core/v1", "v1"),
    ("api", "apps/v1", "apps/v1"),
    ("api", "autoscaling/v1", "autoscaling/v1"),
    ("api", "autoscaling/v2", "autoscaling/v2"),
    ("api", "batch/v1", "batch/v1"),
    ("api", "certificates/v1", "certificates.k8s.io/v1"),
    ("api", "discovery/v1", "discovery.k8s.io/v1"),
    ("api", "events/v1", "events.k8s.io/v1"),
    ("api", "flowcontrol/v1", "flowcontrol.apiserver.k8s.io/v1"),
    ("api", "networking/v1", "networking.k8s.io/v1"),
    ("api", "storage/v1", "storage.k8s.io/v1"),
    ("api", "coordination/v1", "coordination.k8s.io/v1"),
    ("api", "rbac/v1", "rbac.authorization.k8s.io/v1"),
    ("api", "policy/v1", "policy/v1"),
    ("api", "scheduling/v1", "scheduling.k8s.io/v1"),
    ("api", "admissionregistration/v1", "admissionregistration.k8s.io/v1"),
    ("api", "authorization/v1", "authorization.k8s.io/v1"),
    ("api", "authentication/v1", "authentication.k8s.io/v1"),
    ("apiextensions", "pkg/apis/apiextensions/v1", "apiextensions.k8s.io/v1"),
    ("aggregator", "pkg/apis/apiregistration/v1", "apiregistration.k8s.io/v1"),
    ("apimachinery", "pkg/apis/meta/v1", "meta.k8s.io/v1"),
    ("apimachinery", "pkg/runtime", None),
    ("apimachinery", "pkg/runtime/schema", None),
    ("apimachinery", "pkg/api/resource", None),
    ("apimachinery", "pkg/util/intstr", None),
)
SCALARS = {"string", "bytes", "bool", "int32", "int64", "uint32", "uint64", "double", "float"}

_PACKAGE = re.compile(r"^package\s+([\w.]+);", re.M)
_MESSAGE = re.compile(r"^message\s+(\w+)\s*\{(.*?)^\}", re.M | re.S)
_FIELD = re.compile(r"^\s*(optional|repeated|required)\s+([\w.]+)\s+(\w+)\s*=\s*(\d+)", re.M)
_MAP = re.compile(r"^\s*map\s*<\s*(\w+)\s*,\s*([\w.]+)\s*>\s+(\w+)\s*=\s*(\d+)", re.M)
_STRUCT = re.compile(r"^type\s+(\w+)\s+struct\s*\{(.*?)^\}", re.M | re.S)
_SLICE_TYPE = re.compile(r"^type\s+(\w+)\s+\[\]\w+\s*$", re.M)
_GO_FIELD = re.compile(r"^\s*(?:(\w+)\s+)?(\S+)\s+`([^`]*)`", re.M)
_TAG = re.compile(r'(\w+):"([^"]*)"')


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", git_dir, *args], check=True, capture_output=True,
                          text=True).stdout


def _go_fields(sources: list[str]) -> tuple[dict[str, dict[int, tuple[str, str]]], set[str]]:
    """struct name → protobuf field number → (json name, flags) from the Go tags; and the slice types."""
    structs: dict[str, dict[int, tuple[str, str]]] = {}
    slices: set[str] = set()
    for text in sources:
        slices.update(_SLICE_TYPE.findall(text))
        for name, body in _STRUCT.findall(text):
            fields: dict[int, tuple[str, str]] = {}
            for _go_name, go_type, tag in _GO_FIELD.findall(body):
                tags = dict(_TAG.findall(tag))
                if "protobuf" not in tags or "json" not in tags:
                    continue
                number = int(tags["protobuf"].split(",")[1])
                json_name, *options = tags["json"].split(",")
                flags = ""
                if go_type.startswith("*") or "omitempty" not in options:
                    flags += "k"
                if "inline" in options:
                    flags += "i"
                fields[number] = (json_name, flags)
            structs[name] = fields
    return structs, slices


def _qualify(package: str, type_name: str) -> str:
    if type_name in SCALARS:
        return type_name
    if type_name.startswith("."):
        return type_name[1:]
    return f"{package}.{type_name}" if "." not in type_name else type_name


def generate(api_git: str, apimachinery_git: str, apiextensions_git: str, aggregator_git: str) -> str:
    repos = {"api": (api_git, API_TAG), "apimachinery": (apimachinery_git, APIMACHINERY_TAG),
             "apiextensions": (apiextensions_git, APIEXTENSIONS_TAG), "aggregator": (aggregator_git, AGGREGATOR_TAG)}
    messages: dict[str, list[tuple[int, str, str, str]]] = {}
    lists: set[str] = set()
    versions: dict[str, str] = {}
    for repo, directory, api_version in PACKAGES:
        git_dir, tag = repos[repo]
        proto = _git(git_dir, "show", f"{tag}:{directory}/generated.proto")
        package = _PACKAGE.search(proto)
        assert package, directory
        pkg = package.group(1)
        if api_version:
            versions[api_version] = pkg
        names = _git(git_dir, "ls-tree", "--name-only", f"{tag}:{directory}").split()
        go = [_git(git_dir, "show", f"{tag}:{directory}/{n}") for n in sorted(names)
              if n.endswith(".go") and not n.endswith("_test.go") and not n.startswith(("zz_", "generated"))]
        structs, slices = _go_fields(go)
        for name, body in _MESSAGE.findall(proto):
            go_fields = structs.get(name, {})
            fields: list[tuple[int, str, str, str]] = []
            for label, type_name, proto_name, number in _FIELD.findall(body):
                json_name, flags = go_fields.get(int(number), (proto_name, ""))
                fields.append((int(number), json_name or proto_name, _qualify(pkg, type_name),
                               ("r" if label == "repeated" else "") + flags))
            for key_type, value_type, proto_name, number in _MAP.findall(body):
                json_name, flags = go_fields.get(int(number), (proto_name, ""))
                fields.append((int(number), json_name or proto_name, f"{key_type} {_qualify(pkg, value_type)}",
                               "m" + flags))
            messages[f"{pkg}.{name}"] = sorted(fields)
            if name in slices:
                lists.add(f"{pkg}.{name}")
    for name, fields in messages.items():
        for _, _, type_name, _ in fields:
            for part in type_name.split(" "):
                if part not in SCALARS and part not in messages:
                    raise SystemExit(f"{name} refers to {part}, which no package listed defines")
    return _render(messages, lists, versions)


def _render(messages: dict[str, list[tuple[int, str, str, str]]], lists: set[str], versions: dict[str, str]) -> str:
    out = ['"""Kubernetes\' protobuf messages as field tables: GENERATED by hack/gen_protobuf.py from the',
           f"``generated.proto`` files (and Go tags) of k8s.io/api {API_TAG}, k8s.io/apimachinery "
           f"{APIMACHINERY_TAG}, k8s.io/apiextensions-apiserver {APIEXTENSIONS_TAG} and k8s.io/kube-aggregator "
           f"{AGGREGATOR_TAG}.",
           'Do not edit; see that script for the format."""',
           "",
           "# ruff: noqa: E501",
           "",
           "API_VERSIONS = {"]
    out += [f"    {k!r}: {v!r}," for k, v in sorted(versions.items())]
    out += ["}", "", "LISTS = frozenset({"]
    out += [f"    {name!r}," for name in sorted(lists)]
    out += ["})", "", "MESSAGES = {"]
    for name in sorted(messages):
        fields = "".join(f"({n}, {j!r}, {t!r}, {f!r}), " for n, j, t, f in messages[name])
        out.append(f"    {name!r}: ({fields.rstrip(', ')}{',' if len(messages[name]) == 1 else ''}),")
    out += ["}", ""]
    return "\n".join(out)


@click.command()
@click.option("--check", is_flag=True, help="Do not write; exit 1 when the committed table differs.")
@click.option("--api-git", default=DEFAULT_API_GIT, show_default=True, help="A git clone of kubernetes/api.")
@click.option("--apimachinery-git", default=DEFAULT_APIMACHINERY_GIT, show_default=True,
              help="A git clone of kubernetes/apimachinery.")
@click.option("--apiextensions-git", default=DEFAULT_APIEXTENSIONS_GIT, show_default=True,
              help="A git clone of kubernetes/apiextensions-apiserver.")
@click.option("--aggregator-git", default=DEFAULT_AGGREGATOR_GIT, show_default=True,
              help="A git clone of kubernetes/kube-aggregator (APIService).")
def main(check: bool, api_git: str, apimachinery_git: str, apiextensions_git: str, aggregator_git: str) -> None:
    content = generate(api_git, apimachinery_git, apiextensions_git, aggregator_git)
    current = OUTPUT.read_text() if OUTPUT.exists() else None
    if current == content:
        return
    rel = OUTPUT.relative_to(ROOT)
    if check:
        click.echo(f"out of date: {rel}")
        sys.exit(1)
    OUTPUT.write_text(content)
    click.echo(f"written: {rel}")


if __name__ == "__main__":
    main()
