"""Server-side apply's field ownership, as structured-merge-diff computes it for kube-apiserver.

- :mod:`.fieldpath`: paths, field sets and their FieldsV1 form;
- :mod:`.schema`: which lists are atomic, sets or maps keyed by which fields, built from OpenAPI schemas;
- :mod:`.typed`: a value's field set, the comparison of two values, merge and removal, all by schema;
- :mod:`.managers`: who owns what after an Update or an Apply, and the conflicts that refuse an Apply.

Objects are plain JSON dicts; nothing here knows about HTTP or storage (the API server's
``field_manager`` does).
"""
