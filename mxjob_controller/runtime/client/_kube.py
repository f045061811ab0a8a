"""The three modules of the official ``kubernetes`` client this package uses, without the other 1,300.

``import kubernetes.client`` executes the package's ``__init__``, which imports every generated API class and
model: about 1,300 modules, 0.4-0.5 s and 55 MiB of RSS on a development machine, against 0.15 s and 20 MiB for
what this package needs. The transport needs only ``Configuration`` (TLS, proxy and pool settings) and
``rest.RESTClientObject`` (the urllib3 pool manager built from it), whose modules (and ``exceptions``, which
``rest`` imports) import nothing else of the package. So, unless the package is already imported (then its
modules are used as they are), those three files are executed from the installed package under their own names
and then removed from ``sys.modules`` again: a later ``import kubernetes`` by anyone gets the whole package,
untouched.

Guarantee: the code run is the installed client's own, byte for byte; only what gets imported changes. (This
runs once, when this module is first imported; a thread importing ``kubernetes`` at that very moment could see
the three modules early, which is harmless: they are the same code.)
"""

from __future__ import annotations

import importlib.util
import os
import sys
from types import ModuleType

_PACKAGE = "kubernetes.client"
_MODULES = ("exceptions", "configuration", "rest")  # in dependency order: rest imports exceptions


def _load_from_files() -> dict[str, ModuleType]:
    spec = importlib.util.find_spec("kubernetes")  # locates the package without executing it
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the kubernetes client package is not installed")
    client_dir = os.path.join(next(iter(spec.submodule_search_locations)), "client")
    loaded: dict[str, ModuleType] = {}
    placed: list[tuple[str, ModuleType]] = []
    try:
        for short in _MODULES:
            name = f"{_PACKAGE}.{short}"
            mod_spec = importlib.util.spec_from_file_location(name, os.path.join(client_dir, short + ".py"))
            if mod_spec is None or mod_spec.loader is None:
                raise ImportError(f"cannot load {name}")
            module = importlib.util.module_from_spec(mod_spec)
            # Visible while the next modules execute (rest.py does `from kubernetes.client.exceptions import`).
            sys.modules[name] = module
            placed.append((name, module))
            mod_spec.loader.exec_module(module)
            loaded[short] = module
    finally:
        for name, module in placed:
            if sys.modules.get(name) is module:
                del sys.modules[name]
    return loaded


def _modules() -> dict[str, ModuleType]:
    if _PACKAGE in sys.modules:  # already paid for: share its classes
        return {short: importlib.import_module(f"{_PACKAGE}.{short}") for short in _MODULES}
    return _load_from_files()


_loaded = _modules()

Configuration = _loaded["configuration"].Configuration
RESTClientObject = _loaded["rest"].RESTClientObject

__all__ = ["Configuration", "RESTClientObject"]
