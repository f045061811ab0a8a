#!/usr/bin/env bash
# Install Prometheus and promtool (Debian's `prometheus` package) for the monitoring tests, unless both are on PATH.
# As root it uses apt-get directly, otherwise sudo; elsewhere it says what to install and fails.
set -euo pipefail
if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
    exit 0
fi
if ! command -v apt-get >/dev/null; then
    echo "install-prometheus: no apt-get here; install Prometheus >= 2.42 (prometheus and promtool on PATH)" >&2
    exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "install-prometheus: not root and no sudo: apt-get install prometheus" >&2; exit 1; }
    sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
# The package's service is not started: its post-install script asks init, and the tests start their own server.
install() { $sudo apt-get install -y -q --no-install-recommends prometheus >/dev/null; }
install || { $sudo apt-get update -q >/dev/null && install; }
command -v prometheus >/dev/null && command -v promtool >/dev/null
