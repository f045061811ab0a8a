"""The documents stay true to the checkout: README.md is a front page, every file, folder and module path the
documents name exists, every link between them lands on a heading that exists, and dated figures live only in
``docs/performance.md``. (That every command block runs is ``tests/e2e/test_readme_flows.py``'s.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")), "examples/README.md"]
# Where a path written in a document may be relative to: the checkout, the package (``core/pods.py``), the embedded
# cluster and its API server (``local/job_defaults.py``, ``http/connection.py``), the manifests (``overlays/…``).
BASES = [ROOT, ROOT / "mxjob_controller", ROOT / "mxjob_controller" / "local",
         ROOT / "mxjob_controller" / "local" / "apiserver", ROOT / "manifests"]
CODE_SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def text(doc: str) -> str:
    return (ROOT / doc).read_text()


def prose(doc: str) -> str:
    """The document without its fenced blocks (what they hold is run, not read: test_readme_flows)."""
    return re.sub(r"^```.*?^```$", "", text(doc), flags=re.S | re.M)


def named_paths(doc: str) -> list[str]:
    """Backquoted spans that are paths into the checkout: one word with a ``/``, whose first part is a folder of
    one of the bases (so ``sweep/*.yaml``, a placeholder, and ``/var/run/…``, outside, are not)."""
    found = []
    for span in CODE_SPAN.findall(prose(doc)):
        candidate = re.split(r"[:\s]", span, maxsplit=1)[0].rstrip(".,;)")
        if re.fullmatch(r"\w+\.py", candidate):   # a module by its file name: somewhere in the checkout
            if not doc.startswith("examples/"):     # (examples/ names the scripts its jobs' images would hold)
                found.append(candidate)
            continue
        if "/" not in candidate or candidate.startswith(("/", ".", "$", "~")) or re.search(r"[{}<>=|$…]", candidate):
            continue
        first = candidate.split("/", 1)[0]
        if first and any((base / first).is_dir() for base in BASES):
            found.append(candidate)
    return found


def exists(path: str, doc: str) -> bool:
    """``path`` is a file or folder under one of the bases (or the document's own folder), a glob matching one, or
    ``package/module.name``: a module that defines ``name``."""
    if "/" not in path:
        return any(ROOT.glob(f"[!.]*/**/{path}")) or (ROOT / path).exists()
    bases = [(ROOT / doc).parent, *BASES]
    if any(list(base.glob(path)) if "*" in path else (base / path).exists() for base in bases):
        return True
    module, _, name = path.rpartition(".")
    return bool(name.isidentifier() and module and any(
        (base / f"{module}.py").is_file()
        and re.search(rf"^(?:class |def ){name}\b|^{name}\b.*=", (base / f"{module}.py").read_text(), re.M)
        for base in bases))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(doc: str) -> set[str]:
    """The anchors of ``doc``'s headings; a repeated heading gets ``-1``, ``-2``… as on GitHub."""
    found, counts = set(), {}
    for line in prose(doc).splitlines():
        if line.startswith("#"):
            base = slug(line.lstrip("#"))
            n = counts.get(base, 0)
            found.add(base if n == 0 else f"{base}-{n}")
            counts[base] = n + 1
    return found


def test_readme_is_a_front_page():
    """At most 250 lines; the install on a cluster on its first screens; the quick start's ``make test``, which CI
    runs (``.ci/run``)."""
    lines = text("README.md").splitlines()
    assert len(lines) <= 250, len(lines)
    install = lines.index("## Install on a cluster")
    assert install < 60, f"the install on a cluster is at line {install + 1}"
    assert any(line.startswith("| run the tests") and line.endswith("| `make test` |") for line in lines)
    assert "make test" in (ROOT / ".ci" / "run").read_text().splitlines()[-1]
    for doc in DOCS[1:-1]:
        assert f"]({doc})" in text("README.md"), f"README links to {doc}"


@pytest.mark.parametrize("doc", DOCS)
def test_every_path_a_document_names_exists(doc):
    missing = [p for p in named_paths(doc) if not exists(p, doc)]
    assert not missing, f"{doc} names paths that do not exist: {missing}"


@pytest.mark.parametrize("doc", DOCS)
def test_every_link_lands_on_a_file_and_heading_that_exist(doc):
    broken = []
    for target in LINK.findall(prose(doc)):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        resolved = ((ROOT / doc).parent / file).resolve() if file else ROOT / doc
        lands = resolved.exists() and not (anchor and resolved.suffix == ".md"
                                           and anchor not in anchors(str(resolved.relative_to(ROOT))))
        if not lands:
            broken.append(target)
    assert not broken, f"{doc}: broken links {broken}"


def test_dated_figures_live_only_in_performance_md():
    dated = {doc: DATE.findall(text(doc)) for doc in DOCS if doc != "docs/performance.md"}
    assert not {doc: d for doc, d in dated.items() if d}, dated
    assert DATE.search(text("docs/performance.md"))
