# syntax=docker/dockerfile:1
# The controller image: `make image` (needs a Docker engine). Entry point: `mxjob-controller run`; flags are the
# container's args (see manifests/controller/deployment.yaml). tests/e2e/test_wheel.py proves the same steps without
# Docker: build the wheel from exactly the files copied below (less what .dockerignore leaves out: the embedded
# cluster, mxjob_controller/local/, which the operator never imports), install only that wheel into a fresh venv,
# run it.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# --- builder: the wheel, and a virtualenv holding it and its dependencies ---------------------------------------
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY pyproject.toml setup.cfg README.md ./
COPY mxjob_controller ./mxjob_controller
RUN python -m pip wheel --no-deps --wheel-dir /dist . \
 && python -m venv /opt/mxjob-controller \
 && /opt/mxjob-controller/bin/pip install /dist/*.whl \
 && /opt/mxjob-controller/bin/pip uninstall --yes pip setuptools wheel \
 && /opt/mxjob-controller/bin/python -m compileall -q /opt/mxjob-controller/lib

# --- the image: the slim base, the virtualenv, nothing else -----------------------------------------------------
FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="mxjob-controller" \
      org.opencontainers.image.description="Kubernetes operator for distributed Apache MXNet training (MXJob)" \
      org.opencontainers.image.licenses="Apache-2.0"
# No pip or setuptools in the final image either (they stay in the builder).
RUN python -m pip uninstall --yes pip setuptools wheel 2>/dev/null; rm -rf /root/.cache
COPY --from=builder /opt/mxjob-controller /opt/mxjob-controller
# training-operator's image runs /manager: a Deployment swapped to this image that keeps `command: [/manager]` works.
RUN printf '#!/bin/sh\nexec mxjob-controller run "$@"\n' > /manager && chmod 0755 /manager
ENV PATH=/opt/mxjob-controller/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# A numeric, non-root user (no /etc/passwd entry needed): Kubernetes' runAsNonRoot can verify it.
USER 65532:65532
WORKDIR /tmp
EXPOSE 8080 8081
ENTRYPOINT ["mxjob-controller", "run"]
