"""What ``local run`` can tell before a job starts that would make its containers fail: a working directory their
user cannot enter.

Run as root, the local cluster runs containers as nobody (65534:65534) unless their ``securityContext`` says
otherwise; started from a directory only root may pass (``/root/project``, any ``mktemp -d``), each container
fails at its first step (``chdir to cwd … failed: Permission denied``, exit 128) however right the job is. The
check walks each container's working directory (its ``workingDir`` when the kubelet would use it, else the
node's) with the permission bits the container's user has, as the sandbox starts it (``Sandbox.cwd_blocked``), and
says which folder stops it and what to do. Pure but for the ``stat`` of those folders.
"""

from __future__ import annotations

import os
import stat as stat_mode
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from mxjob_controller.local.kubelet.sandbox import NOBODY, RunAs


def pod_templates(obj: Any, depth: int = 0) -> Iterator[dict[str, Any]]:
    """Every pod template in an object (a job's replica specs, a Deployment's ``spec.template``): any mapping
    under a ``template`` key with a ``spec`` that has ``containers``."""
    if depth > 12:
        return
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            if key == "template" and isinstance(value, Mapping) and \
                    isinstance((value.get("spec") or {}).get("containers"), list):
                yield dict(value)
            else:
                yield from pod_templates(value, depth + 1)
    elif isinstance(obj, list):
        for value in obj:
            yield from pod_templates(value, depth + 1)


def describe_user(user: RunAs) -> str:
    return "nobody (65534:65534)" if (user.uid, user.gid) == NOBODY else f"uid {user.uid}, gid {user.gid}"


def workdir_warnings(docs: Sequence[Mapping[str, Any]], user_of: Callable[[Mapping, Mapping], RunAs],
                     usable_dir: Callable[[str], bool], workdir: str,
                     blocked_at: Callable[[str, RunAs], str | None],
                     stat: Callable[[str], os.stat_result] = os.stat) -> list[str]:
    """A warning for each (directory, user) that some container of ``docs`` would start in and cannot enter."""
    seen: dict[tuple[str, int, int], list[str]] = {}
    for doc in docs:
        meta = doc.get("metadata") or {}
        what = f"{doc.get('kind')} {meta.get('namespace') or 'default'}/{meta.get('name') or meta.get('generateName')}"
        for template in pod_templates(doc.get("spec")):
            for container in (template.get("spec") or {}).get("containers") or []:
                if not isinstance(container, Mapping):
                    continue
                cwd = container.get("workingDir") or ""
                if not cwd or not usable_dir(cwd):
                    cwd = workdir
                user = user_of(template, container)
                blocked = blocked_at(os.path.abspath(cwd), user)
                if blocked is not None:
                    seen.setdefault((blocked, user.uid, user.gid), []).append(what)
    out = []
    for (blocked, uid, gid), jobs in seen.items():
        try:
            st = stat(blocked)
            mode = f"mode {stat_mode.S_IMODE(st.st_mode):04o}, owner uid {st.st_uid}"
        except OSError:
            mode = "mode unknown"
        out.append(f"Warning: the containers of {', '.join(dict.fromkeys(jobs))} run as "
                   f"{describe_user(RunAs(uid, gid))}, who cannot enter {blocked} ({mode}): they would fail with "
                   f"`chdir … Permission denied`. Let them in (chmod o+x {blocked}), start `local run` from a "
                   "directory they can enter (or give --workdir), or run them as a user who can "
                   "(--container-user UID[:GID], or the pod's securityContext.runAsUser)")
    return out
