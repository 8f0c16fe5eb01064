#!/usr/bin/env bash
# Starts and stops the two MongoDB-compatible test servers the agentmem-mongodb tests use.
#
#   bash .ci/mongo-servers.sh start   # install if needed, start, wait, print the URLs to export
#   bash .ci/mongo-servers.sh stop    # stop what `start` started (by pid file)
#
# No real mongod can be installed on the CI machines, so the tests talk over the wire to:
#   - SecantusDB (PyPI SecantusDB==0.7.0b3, GPL-2.0; only ever run as a separate server,
#     never linked) on 127.0.0.1:27017: transactions, no text indexes -> MONGODB_URL
#   - nx-27017   (PyPI nx-27017==0.8.1, MIT) on 127.0.0.1:27018: `$text` with textScore
#     -> MONGODB_TEXT_URL
# Virtualenvs, logs and pid files live in $AGENTMEM_CI_CACHE (default ~/.cache/agentmem-ci);
# packages are installed only when missing there, so re-runs are fast and a fresh machine
# works. A server already listening and answering on a port is reused, not restarted.
set -euo pipefail

CACHE="${AGENTMEM_CI_CACHE:-$HOME/.cache/agentmem-ci}"
HOST=127.0.0.1
SECANTUS_PORT=27017
NX_PORT=27018
SECANTUS_PKG="SecantusDB==0.7.0b3"
NX_PKG="nx-27017==0.8.1"
WAIT_SECONDS="${AGENTMEM_MONGO_WAIT_SECONDS:-60}"
PYTHON="${PYTHON:-python3}"

LOG_NAME=mongo-servers
SERVER_DIR="$CACHE"
# shellcheck source=.ci/lib.sh
. "$(dirname "$0")/lib.sh"

# Whether something on $1 answers a MongoDB `ping` (not just a TCP accept), so a stale or
# foreign listener is not mistaken for a ready server.
answers() {
    "$PYTHON" - "$HOST" "$1" <<'PY'
import socket, struct, sys
host, port = sys.argv[1], int(sys.argv[2])
# OP_QUERY on admin.$cmd {isMaster: 1}: the legacy handshake every MongoDB-compatible server
# still answers (MongoDB 5.1+ refuses other commands over OP_QUERY).
doc = b"\x10isMaster\x00\x01\x00\x00\x00\x00"
bson = struct.pack("<i", len(doc) + 4) + doc
body = struct.pack("<i", 0) + b"admin.$cmd\x00" + struct.pack("<ii", 0, -1) + bson
msg = struct.pack("<iiii", 16 + len(body), 1, 0, 2004) + body
try:
    with socket.create_connection((host, port), timeout=2) as s:
        s.settimeout(3)
        s.sendall(msg)
        header = s.recv(16)
        sys.exit(0 if len(header) == 16 else 1)
except OSError:
    sys.exit(1)
PY
}

# Creates the venv in $1 and installs package $2 there unless it is already installed.
ensure_venv() {
    local dir="$1" pkg="$2" name="${2%%==*}"
    if [ -x "$dir/bin/python" ] && "$dir/bin/python" -m pip show -q "$name" >/dev/null 2>&1 \
        && [ "$("$dir/bin/python" -m pip show "$name" 2>/dev/null | sed -n 's/^Version: //p')" = "${pkg##*==}" ]; then
        return 0
    fi
    log "installing $pkg into $dir"
    "$PYTHON" -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$pkg"
}

# Starts server $1 (a name) on port $2 with command "${@:3}" unless one already answers.
start_one() {
    local name="$1" port="$2"
    shift 2
    if answers "$port"; then
        log "$name: something already answers on $HOST:$port; reusing it"
        return 0
    fi
    local pidfile="$CACHE/$name.pid" logfile="$CACHE/$name.log"
    if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
        log "$name: pid $(cat "$pidfile") is running but does not answer yet; waiting for it"
        return 0
    fi
    log "$name: starting on $HOST:$port (log: $logfile)"
    # setsid + nohup: the server outlives this script and the CI step that ran it.
    setsid nohup "$@" >"$logfile" 2>&1 </dev/null &
    echo $! >"$pidfile"
}

# Waits until server $1 answers on port $2 (see `wait_until`).
wait_for() {
    wait_until "$1" answers "$2" || return 1
    log "$1 answers on $HOST:$2"
}

start() {
    mkdir -p "$CACHE"
    if ! answers "$SECANTUS_PORT"; then
        ensure_venv "$CACHE/secantus-venv" "$SECANTUS_PKG"
    fi
    if ! answers "$NX_PORT"; then
        ensure_venv "$CACHE/nx-venv" "$NX_PKG"
    fi
    start_one secantus "$SECANTUS_PORT" "$CACHE/secantus-venv/bin/secantusd-py" \
        --host "$HOST" --port "$SECANTUS_PORT" --storage-path :memory: --log-level WARNING
    start_one nx "$NX_PORT" "$CACHE/nx-venv/bin/nx-27017" \
        --db memory --host "$HOST" -p "$NX_PORT"
    wait_for secantus "$SECANTUS_PORT"
    wait_for nx "$NX_PORT"
    echo "export MONGODB_URL='mongodb://$HOST:$SECANTUS_PORT/?directConnection=true'"
    echo "export MONGODB_TEXT_URL='mongodb://$HOST:$NX_PORT/?directConnection=true'"
}

stop() {
    local name
    for name in secantus nx; do
        stop_pidfile "$CACHE/$name.pid" "$name"
    done
}

start_or_stop "$@"
