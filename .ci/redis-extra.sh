#!/usr/bin/env bash
# Starts and stops the extra Redis servers the agentmem-redis and agentmem-cli tests use
# besides the plain one on 6379:
#
#   bash .ci/redis-extra.sh start   # install if needed, start, wait, print the URLs to export
#   bash .ci/redis-extra.sh stop    # stop what `start` started (by pid file)
#
#   - a TLS-only redis-server on 127.0.0.1:6380 (and 127.0.0.2:6380, where its certificate's
#     names do not match), with a server certificate from a private CA made here with openssl
#     (SAN localhost, 127.0.0.1)                                   -> REDIS_TLS_URL, REDIS_TLS_CA
#   - a TLS-only redis-server on 127.0.0.1:6381 that requires a client certificate
#     (--tls-auth-clients yes), and a client certificate and key from the same private CA
#                                                                  -> REDIS_TLS_CLIENT_AUTH_URL
#   - a 3-master Redis Cluster on 127.0.0.1:7001-7003 (no replicas) -> REDIS_CLUSTER_URL
#   - the same over TLS on 127.0.0.1:7101-7103 (clients and the cluster bus; the same private
#     CA and server certificate)                                    -> REDIS_TLS_CLUSTER_URL
#   - a third 3-master cluster on 127.0.0.1:7201-7203 whose nodes can be restarted: an
#     append-only file synced on every write keeps their data and nodes.conf their slots, and
#     `DEBUG CRASH-AND-RECOVER` is allowed from loopback (the recovery test restarts a node
#     with it; the process re-executes itself under the same pid, so `stop` still finds it)
#                                                                   -> REDIS_RESTART_CLUSTER_URL
#
# Certificates, data, logs and pid files live in $AGENTMEM_REDIS_EXTRA_DIR (default
# $AGENTMEM_CI_CACHE/redis-extra, the cache defaulting to ~/.cache/agentmem-ci; `.ci/run`
# gives each run a fresh folder and removes it at the end). Nothing is persisted (no RDB, no
# AOF) but the restart cluster's AOF, and `stop` removes the clusters' state. A server already answering on its port is
# reused, not restarted; a cluster whose nodes run but are not joined is joined.
# Debian's redis-server (7.0) is built with TLS; redis-server, redis-cli and openssl are
# installed with apt-get when missing.
set -euo pipefail

CACHE="${AGENTMEM_CI_CACHE:-$HOME/.cache/agentmem-ci}"
DIR="${AGENTMEM_REDIS_EXTRA_DIR:-$CACHE/redis-extra}"
CERTS="$DIR/certs"
HOST=127.0.0.1
TLS_PORT=6380
CLIENT_AUTH_PORT=6381
CLUSTER_PORTS=(7001 7002 7003)
TLS_CLUSTER_PORTS=(7101 7102 7103)
RESTART_CLUSTER_PORTS=(7201 7202 7203)
WAIT_SECONDS="${AGENTMEM_REDIS_WAIT_SECONDS:-30}"

LOG_NAME=redis-extra
SERVER_DIR="$DIR"
# shellcheck source=.ci/lib.sh
. "$(dirname "$0")/lib.sh"

ensure_tools() {
    local missing=()
    command -v redis-server >/dev/null || missing+=(redis-server)
    command -v redis-cli >/dev/null || missing+=(redis-tools)
    command -v openssl >/dev/null || missing+=(openssl)
    if [ "${#missing[@]}" -gt 0 ]; then
        log "installing ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
    fi
}

# The private CA, the server certificate it signs and a client certificate (made once per
# folder, then reused). The server certificate serves as a client certificate too: nodes of a
# TLS cluster present it to each other on the cluster bus, which always asks for one.
ensure_certs() {
    mkdir -p "$CERTS"
    if [ -s "$CERTS/ca.crt" ] && [ -s "$CERTS/server.crt" ] && [ -s "$CERTS/server.key" ] \
        && [ -s "$CERTS/client.crt" ] && [ -s "$CERTS/client.key" ] \
        && openssl verify -CAfile "$CERTS/ca.crt" "$CERTS/server.crt" "$CERTS/client.crt" >/dev/null 2>&1 \
        && openssl x509 -checkend 86400 -noout -in "$CERTS/server.crt" >/dev/null 2>&1 \
        && openssl x509 -checkend 86400 -noout -in "$CERTS/client.crt" >/dev/null 2>&1 \
        && openssl x509 -noout -ext extendedKeyUsage -in "$CERTS/server.crt" 2>/dev/null \
            | grep -q "Client Authentication"; then
        return 0
    fi
    log "making a private CA, a server and a client certificate in $CERTS"
    make_ca "agentmem test CA"
    sign_cert server localhost "subjectAltName=DNS:localhost,IP:127.0.0.1" \
        "basicConstraints=CA:FALSE" "keyUsage=digitalSignature,keyEncipherment" \
        "extendedKeyUsage=serverAuth,clientAuth"
    sign_cert client "agentmem test client" "basicConstraints=CA:FALSE" \
        "keyUsage=digitalSignature,keyEncipherment" "extendedKeyUsage=clientAuth"
}

# Whether a TLS server answers on port $1 (presenting the client certificate when $2 is 1).
tls_answers() {
    local client=()
    [ "${2:-0}" = 1 ] && client=(--cert "$CERTS/client.crt" --key "$CERTS/client.key")
    redis-cli -h "$HOST" -p "$1" --tls --cacert "$CERTS/ca.crt" "${client[@]}" ping 2>/dev/null \
        | grep -q PONG
}

# redis-cli, over TLS (trusting the private CA) when $1 is 1.
rcli() {
    local tls="$1"
    shift
    if [ "$tls" = 1 ]; then
        redis-cli --tls --cacert "$CERTS/ca.crt" "$@"
    else
        redis-cli "$@"
    fi
}

# Whether the node on port $2 (TLS when $1 is 1) answers.
node_answers() {
    rcli "$1" -h "$HOST" -p "$2" ping 2>/dev/null | grep -q PONG
}

# Whether every node on the ports $2… (TLS when $1 is 1) sees a working cluster.
cluster_ok() {
    local tls="$1" port
    shift
    for port in "$@"; do
        rcli "$tls" -h "$HOST" -p "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
    done
}

# Starts `redis-server "${@:2}"` as server $1 in the background, persisting nothing unless
# its arguments say otherwise; it outlives this script.
spawn() {
    local name="$1" pidfile="$DIR/$1.pid"
    shift
    if [ -f "$pidfile" ] && alive "$(cat "$pidfile")"; then
        log "$name: pid $(cat "$pidfile") runs but does not answer yet; waiting for it"
        return 0
    fi
    log "$name: starting (log: $DIR/$name.log)"
    # By its absolute path: a node restarting itself (DEBUG RESTART, CRASH-AND-RECOVER)
    # re-executes the path it was started with, taken as relative to its working folder.
    setsid nohup "$(command -v redis-server)" --save "" --appendonly no "$@" --daemonize no \
        --logfile "$DIR/$name.log" >/dev/null 2>&1 </dev/null &
    echo $! >"$pidfile"
}

# Starts (or reuses) TLS server $1 on port $2, requiring a client certificate when $3 is
# `yes`; the other arguments are redis-server's.
start_tls() {
    local name="$1" port="$2" auth="$3" client=0
    shift 3
    [ "$auth" = yes ] && client=1
    if tls_answers "$port" "$client"; then
        log "$name: something already answers TLS on $HOST:$port; reusing it"
        return 0
    fi
    mkdir -p "$DIR/$name"
    spawn "$name" "$@" --port 0 --tls-port "$port" \
        --tls-cert-file "$CERTS/server.crt" --tls-key-file "$CERTS/server.key" \
        --tls-ca-cert-file "$CERTS/ca.crt" --tls-auth-clients "$auth" --dir "$DIR/$name"
    wait_until "$name" tls_answers "$port" "$client"
    log "$name: answers on $HOST:$port"
}

# Starts (or reuses) cluster $1: one master on each of the ports $3…, over TLS (client
# connections and the cluster bus) when $2 is 1; each node's redis-server arguments end with
# the words of $CLUSTER_NODE_ARGS.
start_cluster() {
    local name="$1" tls="$2"
    shift 2
    local ports=("$@") port fresh=0 extra=()
    read -r -a extra <<<"${CLUSTER_NODE_ARGS:-}"
    if cluster_ok "$tls" "${ports[@]}"; then
        log "$name: already up on ports ${ports[*]}; reusing it"
        return 0
    fi
    for port in "${ports[@]}"; do
        if ! node_answers "$tls" "$port"; then
            # A node that is not running starts afresh: its old cluster state is stale.
            rm -rf "$DIR/$name-$port"
            mkdir -p "$DIR/$name-$port"
            local listen=(--port "$port")
            if [ "$tls" = 1 ]; then
                listen=(--port 0 --tls-port "$port" --tls-cluster yes
                    --tls-cert-file "$CERTS/server.crt" --tls-key-file "$CERTS/server.key"
                    --tls-ca-cert-file "$CERTS/ca.crt" --tls-auth-clients no)
            fi
            spawn "$name-$port" --bind "$HOST" "${listen[@]}" --cluster-enabled yes \
                --cluster-config-file "$DIR/$name-$port/nodes.conf" \
                --cluster-node-timeout 5000 --dir "$DIR/$name-$port" "${extra[@]}"
            fresh=1
        fi
    done
    for port in "${ports[@]}"; do
        wait_until "$name-$port" node_answers "$tls" "$port"
    done
    local known
    known="$(rcli "$tls" -h "$HOST" -p "${ports[0]}" cluster info 2>/dev/null \
        | sed -n 's/^cluster_slots_assigned:\([0-9]*\).*/\1/p')"
    if [ "$fresh" = 1 ] || [ "${known:-0}" = 0 ]; then
        local nodes=()
        for port in "${ports[@]}"; do
            # A restarted node must be empty for `--cluster create`.
            rcli "$tls" -h "$HOST" -p "$port" flushall >/dev/null 2>&1 || true
            rcli "$tls" -h "$HOST" -p "$port" cluster reset hard >/dev/null 2>&1 || true
            nodes+=("$HOST:$port")
        done
        log "$name: joining ${nodes[*]}"
        local tls_args=()
        [ "$tls" = 1 ] && tls_args=(--tls --cacert "$CERTS/ca.crt")
        # (It waits for the nodes to meet for as long as it takes: bounded here.)
        timeout "$WAIT_SECONDS" redis-cli "${tls_args[@]}" --cluster create "${nodes[@]}" \
            --cluster-replicas 0 --cluster-yes >"$DIR/$name-create.log" 2>&1 || {
            log "$name: --cluster create failed or timed out:"
            cat "$DIR/$name-create.log" >&2
            return 1
        }
    fi
    wait_until "$name-${ports[0]}" cluster_ok "$tls" "${ports[@]}"
    log "$name: state ok on ports ${ports[*]}"
}

start() {
    ensure_tools
    mkdir -p "$DIR"
    ensure_certs
    # Also on 127.0.0.2, a name the certificate does not hold (for the host-name check).
    start_tls tls "$TLS_PORT" no --bind "$HOST" 127.0.0.2
    start_tls tls-client-auth "$CLIENT_AUTH_PORT" yes --bind "$HOST"
    start_cluster cluster 0 "${CLUSTER_PORTS[@]}"
    start_cluster tls-cluster 1 "${TLS_CLUSTER_PORTS[@]}"
    CLUSTER_NODE_ARGS="--appendonly yes --appendfsync always --enable-debug-command local" \
        start_cluster restart-cluster 0 "${RESTART_CLUSTER_PORTS[@]}"
    echo "export REDIS_TLS_CA='$CERTS/ca.crt'"
    echo "export REDIS_TLS_URL='rediss://$HOST:$TLS_PORT/?tls_ca=$(urlencode "$CERTS/ca.crt")'"
    echo "export REDIS_TLS_CLIENT_AUTH_URL='rediss://$HOST:$CLIENT_AUTH_PORT/?tls_ca=$(urlencode "$CERTS/ca.crt")&tls_cert=$(urlencode "$CERTS/client.crt")&tls_key=$(urlencode "$CERTS/client.key")'"
    local seeds
    seeds="$(printf "$HOST:%s," "${CLUSTER_PORTS[@]}")"
    echo "export REDIS_CLUSTER_URL='redis+cluster://${seeds%,}/'"
    seeds="$(printf "$HOST:%s," "${TLS_CLUSTER_PORTS[@]}")"
    echo "export REDIS_TLS_CLUSTER_URL='rediss+cluster://${seeds%,}/?tls_ca=$(urlencode "$CERTS/ca.crt")'"
    seeds="$(printf "$HOST:%s," "${RESTART_CLUSTER_PORTS[@]}")"
    echo "export REDIS_RESTART_CLUSTER_URL='redis+cluster://${seeds%,}/'"
}

stop() {
    local name
    local clusters=("${CLUSTER_PORTS[@]/#/cluster-}" "${TLS_CLUSTER_PORTS[@]/#/tls-cluster-}"
        "${RESTART_CLUSTER_PORTS[@]/#/restart-cluster-}")
    for name in tls tls-client-auth "${clusters[@]}"; do
        stop_pidfile "$DIR/$name.pid" "$name"
    done
    # Cluster state is not kept: the next start makes a new cluster.
    for name in "${clusters[@]}"; do
        rm -rf "${DIR:?}/$name"
    done
}

start_or_stop "$@"
