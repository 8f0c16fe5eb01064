#!/usr/bin/env bash
# Starts and stops the MongoDB-compatible test servers the agentmem-mongodb tests use.
#
#   bash .ci/mongo-servers.sh start   # install if needed, start, wait, print the URLs to export
#   bash .ci/mongo-servers.sh stop    # stop what `start` started (by pid file)
#
# No real mongod can be installed on the CI machines, so the tests talk over the wire to:
#   - SecantusDB (PyPI SecantusDB==0.7.0b3, GPL-2.0; only ever run as a separate server,
#     never linked) on 127.0.0.1:27017: transactions, no text indexes -> MONGODB_URL
#   - nx-27017   (PyPI nx-27017==0.8.1, MIT) on 127.0.0.1:27018: `$text` with textScore
#     -> MONGODB_TEXT_URL
#   - SecantusDB over TLS on 127.0.0.1:27019: neither server speaks TLS, so stunnel (Debian's
#     stunnel4, installed with apt-get when missing) terminates it in front of 27017, with a
#     server certificate (SAN localhost, 127.0.0.1) from a private CA made here with openssl
#     -> MONGODB_TLS_URL (tls=true, tlsCAFile naming the CA)
# Virtualenvs, logs and pid files live in $AGENTMEM_CI_CACHE (default ~/.cache/agentmem-ci);
# packages are installed only when missing there, so re-runs are fast and a fresh machine
# works. The CA and certificates live in $AGENTMEM_MONGO_TLS_DIR (default $CACHE/mongo-tls;
# `.ci/run` gives each run a fresh folder and removes it at the end). A server already
# listening and answering on a port is reused, not restarted (the TLS proxy only when it
# answers with a certificate from that folder's CA).
set -euo pipefail

CACHE="${AGENTMEM_CI_CACHE:-$HOME/.cache/agentmem-ci}"
HOST=127.0.0.1
SECANTUS_PORT=27017
NX_PORT=27018
TLS_PORT=27019
TLS_DIR="${AGENTMEM_MONGO_TLS_DIR:-$CACHE/mongo-tls}"
CERTS="$TLS_DIR/certs"
SECANTUS_PKG="SecantusDB==0.7.0b3"
NX_PKG="nx-27017==0.8.1"
WAIT_SECONDS="${AGENTMEM_MONGO_WAIT_SECONDS:-60}"
PYTHON="${PYTHON:-python3}"

LOG_NAME=mongo-servers
SERVER_DIR="$CACHE"
# shellcheck source=.ci/lib.sh
. "$(dirname "$0")/lib.sh"

# Whether something on $1 answers a MongoDB `ping` (not just a TCP accept), so a stale or
# foreign listener is not mistaken for a ready server; over TLS, trusting only the CA
# certificate in file $2, when $2 is given.
answers() {
    "$PYTHON" - "$HOST" "$1" "${2:-}" <<'PY'
import socket, ssl, struct, sys
host, port, ca = sys.argv[1], int(sys.argv[2]), sys.argv[3]
# OP_QUERY on admin.$cmd {isMaster: 1}: the legacy handshake every MongoDB-compatible server
# still answers (MongoDB 5.1+ refuses other commands over OP_QUERY).
doc = b"\x10isMaster\x00\x01\x00\x00\x00\x00"
bson = struct.pack("<i", len(doc) + 4) + doc
body = struct.pack("<i", 0) + b"admin.$cmd\x00" + struct.pack("<ii", 0, -1) + bson
msg = struct.pack("<iiii", 16 + len(body), 1, 0, 2004) + body
try:
    with socket.create_connection((host, port), timeout=2) as s:
        s.settimeout(3)
        if ca:
            s = ssl.create_default_context(cafile=ca).wrap_socket(s, server_hostname=host)
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
    launch "$name" "$@"
}

# Runs command "${@:2}" as server $1 in the background (pid and log in the cache) unless
# its pid file names a running process.
launch() {
    local name="$1" pidfile="$CACHE/$1.pid" logfile="$CACHE/$1.log"
    shift
    if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
        log "$name: pid $(cat "$pidfile") is running but does not answer yet; waiting for it"
        return 0
    fi
    log "$name: starting (log: $logfile)"
    # setsid + nohup: the server outlives this script and the CI step that ran it.
    setsid nohup "$@" >"$logfile" 2>&1 </dev/null &
    echo $! >"$pidfile"
}

# Waits until server $1 answers on port $2, over TLS trusting the CA in file $3 when given
# (see `wait_until`).
wait_for() {
    wait_until "$1" answers "$2" "${3:-}" || return 1
    log "$1 answers on $HOST:$2"
}

# stunnel (and openssl, for the certificates), installed with apt-get when missing.
ensure_stunnel() {
    local missing=()
    command -v stunnel4 >/dev/null || missing+=(stunnel4)
    command -v openssl >/dev/null || missing+=(openssl)
    if [ "${#missing[@]}" -gt 0 ]; then
        log "installing ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
    fi
}

# Starts (or reuses) stunnel on $TLS_PORT in front of SecantusDB, with a server certificate
# from the private CA in $CERTS (made once per folder).
start_tls_proxy() {
    if answers "$TLS_PORT" "$CERTS/ca.crt"; then
        log "mongo-tls: something already answers TLS on $HOST:$TLS_PORT; reusing it"
        return 0
    fi
    ensure_stunnel
    if ! [ -s "$CERTS/ca.crt" ] || ! [ -s "$CERTS/server.crt" ] || ! [ -s "$CERTS/server.key" ]; then
        log "making a private CA and a server certificate in $CERTS"
        make_ca "agentmem MongoDB test CA"
        sign_cert server localhost "subjectAltName=DNS:localhost,IP:127.0.0.1" \
            "basicConstraints=CA:FALSE" "keyUsage=digitalSignature,keyEncipherment" \
            "extendedKeyUsage=serverAuth"
    fi
    cat >"$TLS_DIR/stunnel.conf" <<EOF
; Written by .ci/mongo-servers.sh on every start.
foreground = yes
pid =
debug = warning
[mongodb]
accept = $HOST:$TLS_PORT
connect = $HOST:$SECANTUS_PORT
cert = $CERTS/server.crt
key = $CERTS/server.key
EOF
    launch mongo-tls stunnel4 "$TLS_DIR/stunnel.conf"
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
    mkdir -p "$TLS_DIR"
    start_tls_proxy
    wait_for mongo-tls "$TLS_PORT" "$CERTS/ca.crt"
    echo "export MONGODB_URL='mongodb://$HOST:$SECANTUS_PORT/?directConnection=true'"
    echo "export MONGODB_TEXT_URL='mongodb://$HOST:$NX_PORT/?directConnection=true'"
    echo "export MONGODB_TLS_URL='mongodb://$HOST:$TLS_PORT/?tls=true&tlsCAFile=$(urlencode "$CERTS/ca.crt")&directConnection=true'"
}

stop() {
    local name
    for name in mongo-tls secantus nx; do
        stop_pidfile "$CACHE/$name.pid" "$name"
    done
}

start_or_stop "$@"
