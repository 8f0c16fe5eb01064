# Shell functions the .ci server scripts share (mongo-servers.sh, postgres-extra.sh,
# redis-extra.sh). Sourced, not run: the sourcing script sets LOG_NAME first and defines
# `start` and `stop`.

log() { echo "$LOG_NAME: $*" >&2; }

# Whether process $1 runs (a zombie does not: nothing may reap the servers a script left).
alive() {
    local state
    state="$(ps -o stat= -p "$1" 2>/dev/null)" || return 1
    [ -n "$state" ] && [ "${state:0:1}" != Z ]
}

# Stops the process whose id pid file $1 holds (named $2 in the log): TERM, up to 5 s to
# exit, then KILL; the pid file is removed either way.
stop_pidfile() {
    local pidfile="$1" name="$2" pid
    [ -f "$pidfile" ] || return 0
    pid="$(cat "$pidfile")"
    if alive "$pid"; then
        log "stopping $name (pid $pid)"
        kill "$pid" 2>/dev/null || true
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            alive "$pid" || break
            sleep 0.5
        done
        if alive "$pid"; then kill -9 "$pid" 2>/dev/null || true; fi
    fi
    rm -f "$pidfile"
}

# Runs the sourcing script's `start` or `stop`, as its first argument asks.
start_or_stop() {
    case "${1:-}" in
        start) start ;;
        stop) stop ;;
        *)
            echo "usage: $0 start|stop" >&2
            exit 2
            ;;
    esac
}
