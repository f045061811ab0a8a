"""JSON merge patch (RFC 7386), the patch format the controller and the API server share.

JSON patch (RFC 6902) and strategic merge patch, which only the embedded API server applies, are
``local/apiserver/patch/json_patch.py`` and ``local/apiserver/patch/strategic_merge.py``.
"""
