"""The admission and conversion webhooks ``run`` serves (``--webhook-bind-address``): ``admission`` (refuse an
invalid job at submit), ``conversion`` (MXJob ``v1alpha1`` ⇄ ``v1``), ``certs`` (the serving certificate),
``server`` (HTTPS paths and metrics)."""
