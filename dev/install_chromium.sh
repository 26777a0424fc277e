#!/bin/sh
# Debian's chromium for the browser test (test/unit/backends/test_html_report.py), installed
# when missing, as root or through sudo.
#
#   dev/install_chromium.sh start DIR   begin the install in the background (its download
#                                       and unpacking overlap the pip installs and lint)
#   dev/install_chromium.sh wait DIR    finish it: wait for a started install, or run one
#
# DIR holds the background run's log and exit status.  Exits non-zero when the install
# fails, so `make` stops there (under CI the browser test must not skip).
set -u
action=$1
dir=$2
log="$dir/chromium-install.log"
status="$dir/chromium-install.status"

install() {
    command -v chromium >/dev/null && return 0
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo -n"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 ||
        { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends chromium; }
}

case $action in
start)
    command -v chromium >/dev/null && exit 0
    rm -f "$status"
    ( install >"$log" 2>&1; echo $? >"$status" ) &
    echo $! >"$dir/chromium-install.pid"
    ;;
wait)
    if [ -f "$dir/chromium-install.pid" ]; then
        while [ ! -f "$status" ] && kill -0 "$(cat "$dir/chromium-install.pid")" 2>/dev/null; do
            sleep 1
        done
        rm -f "$dir/chromium-install.pid"
        if [ -f "$status" ] && [ "$(cat "$status")" = 0 ]; then exit 0; fi
        cat "$log" >&2 2>/dev/null
    fi
    install  # not started, or the background run failed: once more, in the open
    ;;
*)
    echo "usage: $0 start|wait DIR" >&2
    exit 2
    ;;
esac
