# Shell functions the .ci server scripts share (mongo-servers.sh, postgres-extra.sh,
# redis-extra.sh). Sourced, not run: the sourcing script sets LOG_NAME first and defines
# `start` and `stop`; one that waits for its servers with `wait_until` also sets
# WAIT_SECONDS and SERVER_DIR (where server NAME keeps NAME.pid and NAME.log); one that makes
# certificates with `make_ca` and `sign_cert` sets CERTS (the folder they go to).

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

# Waits until `$2 …` succeeds, polling twice a second for up to WAIT_SECONDS; fails with
# the last lines of server $1's log when that time passes or the server exits first.
wait_until() {
    local name="$1" waited=0
    shift
    until "$@"; do
        if [ -f "$SERVER_DIR/$name.pid" ] && ! alive "$(cat "$SERVER_DIR/$name.pid")"; then
            log "$name exited before it was ready; last log lines:"
            tail -n 30 "$SERVER_DIR/$name.log" >&2 2>/dev/null || true
            rm -f "$SERVER_DIR/$name.pid"
            return 1
        fi
        if [ "$waited" -ge "$((WAIT_SECONDS * 2))" ]; then
            log "$name is not ready after ${WAIT_SECONDS}s; last log lines:"
            tail -n 30 "$SERVER_DIR/$name.log" >&2 2>/dev/null || true
            return 1
        fi
        sleep 0.5
        waited=$((waited + 1))
    done
}

# Makes a private CA named $1 in $CERTS (ca.crt, and ca.key readable by its owner only).
make_ca() {
    mkdir -p "$CERTS"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=$1" \
        -keyout "$CERTS/ca.key" -out "$CERTS/ca.crt" 2>/dev/null
    chmod 600 "$CERTS/ca.key"
}

# Signs certificate $1 (files $CERTS/$1.crt and $1.key) for common name $2 with the private CA;
# the remaining arguments are its X.509 extension lines.
sign_cert() {
    local name="$1" cn="$2"
    shift 2
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$cn" \
        -keyout "$CERTS/$name.key" -out "$CERTS/$name.csr" 2>/dev/null
    printf '%s\n' "$@" >"$CERTS/$name.ext"
    openssl x509 -req -in "$CERTS/$name.csr" -CA "$CERTS/ca.crt" -CAkey "$CERTS/ca.key" \
        -CAcreateserial -days 3650 -extfile "$CERTS/$name.ext" -out "$CERTS/$name.crt" 2>/dev/null
    chmod 600 "$CERTS/$name.key"
    rm -f "$CERTS/$name.csr"
}

# $1 percent-encoded for a URL's query (a path may hold spaces or `&`).
urlencode() {
    local text="$1" out="" c i
    for ((i = 0; i < ${#text}; i++)); do
        c="${text:i:1}"
        case "$c" in
            [A-Za-z0-9/._~-]) out+="$c" ;;
            *) out+="$(printf '%%%02X' "'$c")" ;;
        esac
    done
    printf '%s' "$out"
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
