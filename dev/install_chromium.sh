#!/bin/sh
# Debian's chromium for the browser test (test/unit/backends/test_html_report.py), installed
# when missing, as root or through sudo.  `make` runs it in the background
# (dev/background.sh): its download and unpacking overlap the pip installs and lint.
set -u
command -v chromium >/dev/null && exit 0
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo -n"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 ||
    { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends chromium; }
