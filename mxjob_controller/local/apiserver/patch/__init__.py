"""Changing a stored object by a client's description of the change, as kube-apiserver does.

Guarantees:

- Each patch format is applied with kube's semantics and refused with kube's status: JSON merge patch, JSON patch
  with evanphx/json-patch v4's quirks (``json_patch.py``), strategic merge patch with apimachinery's algorithm and
  directives (``strategic_merge.py``); ``patchers.py`` maps a request's content type to its patcher, and the patch
  verb looks it up there by name.
- Field ownership (``field_manager.py`` over ``managedfields/``): every write records its manager in
  ``metadata.managedFields``; server-side apply merges a configuration by its owner and answers 409 on conflicts.

Pure where it can be: a patcher is a function of (resource type, a private copy of the object, the patch).
"""
