#!/bin/sh
# A set-up step that is mostly download and unpacking, run in the background while
# `make` does other work, and waited for where its result is needed.
#
#   dev/background.sh start NAME DIR CMD...   begin CMD in the background
#   dev/background.sh wait NAME DIR CMD...    finish it: wait for a started run; when none
#                                             was started, or it failed, run CMD in the open
#
# DIR holds the background run's log (NAME.log), pid and exit status.  `wait` exits
# non-zero when CMD fails, so `make` stops there (under CI no test may skip for want of it).
set -u
action=$1
name=$2
dir=$3
shift 3
log="$dir/$name.log"
status="$dir/$name.status"
pid="$dir/$name.pid"

case $action in
start)
    rm -f "$status"
    ( "$@" >"$log" 2>&1; echo $? >"$status" ) &
    echo $! >"$pid"
    ;;
wait)
    if [ -f "$pid" ]; then
        while [ ! -f "$status" ] && kill -0 "$(cat "$pid")" 2>/dev/null; do
            sleep 1
        done
        rm -f "$pid"
        if [ -f "$status" ] && [ "$(cat "$status")" = 0 ]; then exit 0; fi
        cat "$log" >&2 2>/dev/null
    fi
    "$@"
    ;;
*)
    echo "usage: $0 start|wait NAME DIR CMD..." >&2
    exit 2
    ;;
esac
