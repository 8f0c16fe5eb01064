#!/usr/bin/env bash
# Starts and stops the extra PostgreSQL servers the agentmem-postgres tests use beside the
# plain server on 127.0.0.1:5432 (which `.ci/run` starts and this script never touches):
#
#   bash .ci/postgres-extra.sh start   # generate certificates, start, wait, print the URLs to export
#   bash .ci/postgres-extra.sh stop    # stop what `start` started
#
#   - a second PostgreSQL 15 cluster on 127.0.0.1:5433, TLS only (pg_hba has `hostssl` lines
#     and nothing else for TCP): a private CA signs its certificate (SAN localhost and
#     127.0.0.1); `postgres` logs in with SCRAM (password `agentmem-ci`, so channel binding is
#     exercised), `agentmem_cert` with a client certificate (`cert` authentication)
#     -> POSTGRES_TLS_URL (sslmode=verify-full with the private CA), POSTGRES_TLS_CA,
#        POSTGRES_TLS_CLIENT_CERT, POSTGRES_TLS_CLIENT_KEY
#   - PgBouncer on 127.0.0.1:6432 in `pool_mode = transaction` in front of the plain server on
#     127.0.0.1:5432 (trust, database `test`); it speaks no TLS to its clients
#     -> PGBOUNCER_URL
#
# Everything lives in $AGENTMEM_PG_EXTRA_DIR (default /tmp/agentmem-postgres-extra; not under
# $HOME, which the `postgres` user running the servers cannot enter). `.ci/run` gives each
# run a fresh folder and removes it at the end, the cluster with its roles and password.
# Certificates and the cluster are made once per folder and reused; a server already running
# is reused. Run as root (the servers run as `postgres` through runuser) or as the `postgres`
# user itself. Installs Debian's pgbouncer package when missing. Only `export …` lines go to
# stdout.
set -euo pipefail

DIR="${AGENTMEM_PG_EXTRA_DIR:-/tmp/agentmem-postgres-extra}"
PGBIN="${AGENTMEM_PG_BIN:-/usr/lib/postgresql/15/bin}"
HOST=127.0.0.1
TLS_PORT=5433
BOUNCER_PORT=6432
PLAIN_PORT=5432
TLS_PASSWORD=agentmem-ci
CERT_USER=agentmem_cert
WAIT_SECONDS="${AGENTMEM_PG_EXTRA_WAIT_SECONDS:-60}"

CERTS="$DIR/certs"
DATA="$DIR/data"
RUN="$DIR/run"
BOUNCER="$DIR/pgbouncer"

LOG_NAME=postgres-extra
# shellcheck source=.ci/lib.sh
. "$(dirname "$0")/lib.sh"

# Runs "$@" as the `postgres` user.
as_pg() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# Makes $1 (a file or folder) belong to the `postgres` user when running as root.
give_pg() {
    if [ "$(id -u)" -eq 0 ]; then chown -R postgres:postgres "$@"; fi
}

# Signs certificate $1 (CN $2, extensions $3) with the CA in $CERTS; key in $1.key.
issue() {
    local name="$1" cn="$2" ext="$3"
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$CERTS/$name.key" -out "$CERTS/$name.csr" -subj "/CN=$cn" 2>/dev/null
    printf '%s\n' "$ext" >"$CERTS/$name.ext"
    openssl x509 -req -in "$CERTS/$name.csr" -CA "$CERTS/ca.crt" -CAkey "$CERTS/ca.key" \
        -CAcreateserial -days 3650 -sha256 -extfile "$CERTS/$name.ext" \
        -out "$CERTS/$name.crt" 2>/dev/null
    rm -f "$CERTS/$name.csr" "$CERTS/$name.ext"
}

# The private CA, the server's certificate and a client certificate, made once.
make_certs() {
    mkdir -p "$CERTS"
    chmod 755 "$CERTS"
    if ! [ -s "$CERTS/ca.crt" ] || ! [ -s "$CERTS/server.crt" ] || ! [ -s "$CERTS/server.key" ] \
        || ! [ -s "$CERTS/client.crt" ] || ! [ -s "$CERTS/client.key" ]; then
        generate_certs
    fi
    # Keys readable by their owner only (PostgreSQL and libpq insist); PostgreSQL wants its
    # key owned by the user it runs as.
    chmod 600 "$CERTS/ca.key" "$CERTS/server.key" "$CERTS/client.key"
    chmod 644 "$CERTS/ca.crt" "$CERTS/server.crt" "$CERTS/client.crt"
    give_pg "$CERTS/server.key" "$CERTS/server.crt"
}

generate_certs() {
    log "generating a private CA and certificates in $CERTS"
    openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$CERTS/ca.key" -out "$CERTS/ca.crt" -days 3650 -sha256 \
        -subj "/CN=agentmem CI private CA" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    issue server localhost "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,IP:127.0.0.1"
    issue client "$CERT_USER" "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"
}

# Whether the TLS cluster is running.
tls_running() {
    [ -f "$DATA/PG_VERSION" ] && as_pg "$PGBIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

# Writes the TLS cluster's settings and pg_hba (every start, so they stay as described above).
configure_cluster() {
    cat >"$DATA/agentmem.conf" <<EOF
# Written by .ci/postgres-extra.sh on every start.
listen_addresses = '$HOST'
port = $TLS_PORT
unix_socket_directories = '$RUN'
ssl = on
ssl_cert_file = '$CERTS/server.crt'
ssl_key_file = '$CERTS/server.key'
ssl_ca_file = '$CERTS/ca.crt'
password_encryption = 'scram-sha-256'
max_connections = 200
shared_buffers = 32MB
# A throwaway test server: durability is not needed.
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
    grep -q "^include 'agentmem.conf'" "$DATA/postgresql.conf" \
        || echo "include 'agentmem.conf'" >>"$DATA/postgresql.conf"
    cat >"$DATA/pg_hba.conf" <<EOF
# Written by .ci/postgres-extra.sh on every start. TCP only with TLS (no plain "host" line).
local   all  all                        trust
hostssl all  $CERT_USER  $HOST/32  cert
hostssl all  all          $HOST/32  scram-sha-256
EOF
    give_pg "$DATA/agentmem.conf" "$DATA/pg_hba.conf"
}

start_cluster() {
    mkdir -p "$DIR" "$RUN"
    chmod 755 "$DIR"
    give_pg "$RUN"
    if [ ! -f "$DATA/PG_VERSION" ]; then
        log "creating a PostgreSQL cluster in $DATA"
        rm -rf "$DATA"
        mkdir -p "$DATA"
        give_pg "$DATA"
        as_pg "$PGBIN/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 \
            --locale=C.UTF-8 >"$DIR/initdb.log" 2>&1 \
            || { tail -n 20 "$DIR/initdb.log" >&2; return 1; }
    fi
    configure_cluster
    if tls_running; then
        log "the TLS cluster is running; reloading its settings"
        as_pg "$PGBIN/pg_ctl" -D "$DATA" reload >/dev/null
    else
        log "starting the TLS cluster on $HOST:$TLS_PORT (log: $DIR/postgres.log)"
        touch "$DIR/postgres.log"
        give_pg "$DIR/postgres.log"
        as_pg "$PGBIN/pg_ctl" -D "$DATA" -l "$DIR/postgres.log" -w -t "$WAIT_SECONDS" start \
            >/dev/null || { tail -n 40 "$DIR/postgres.log" >&2; return 1; }
    fi
    local psql=(as_pg "$PGBIN/psql" -h "$RUN" -p "$TLS_PORT" -U postgres -X -q -v ON_ERROR_STOP=1)
    if [ "$("${psql[@]}" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'")" != 1 ]; then
        "${psql[@]}" -d postgres -c "CREATE DATABASE test"
    fi
    "${psql[@]}" -d postgres >/dev/null <<EOF
ALTER ROLE postgres PASSWORD '$TLS_PASSWORD';
DO \$\$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$CERT_USER') THEN
        CREATE ROLE $CERT_USER LOGIN;
    END IF;
END \$\$;
GRANT CREATE, CONNECT ON DATABASE test TO $CERT_USER;
EOF
}

bouncer_running() {
    [ -f "$BOUNCER/pgbouncer.pid" ] && kill -0 "$(cat "$BOUNCER/pgbouncer.pid")" 2>/dev/null
}

start_bouncer() {
    if ! command -v pgbouncer >/dev/null 2>&1 && [ ! -x /usr/sbin/pgbouncer ]; then
        log "installing pgbouncer"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q pgbouncer >/dev/null 2>&1 || {
            DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q pgbouncer >/dev/null
        }
    fi
    local bin
    bin="$(command -v pgbouncer || echo /usr/sbin/pgbouncer)"
    mkdir -p "$BOUNCER"
    cat >"$BOUNCER/pgbouncer.ini" <<EOF
; Written by .ci/postgres-extra.sh on every start.
[databases]
test = host=$HOST port=$PLAIN_PORT dbname=test

[pgbouncer]
listen_addr = $HOST
listen_port = $BOUNCER_PORT
unix_socket_dir =
auth_type = trust
auth_file = $BOUNCER/userlist.txt
pool_mode = transaction
default_pool_size = 10
max_client_conn = 500
ignore_startup_parameters = extra_float_digits
logfile = $BOUNCER/pgbouncer.log
pidfile = $BOUNCER/pgbouncer.pid
admin_users = postgres
EOF
    echo '"postgres" ""' >"$BOUNCER/userlist.txt"
    give_pg "$BOUNCER"
    if bouncer_running; then
        log "pgbouncer is running; reloading its settings"
        kill -HUP "$(cat "$BOUNCER/pgbouncer.pid")"
    else
        log "starting pgbouncer on $HOST:$BOUNCER_PORT (transaction pooling; log: $BOUNCER/pgbouncer.log)"
        as_pg "$bin" -d -q "$BOUNCER/pgbouncer.ini" || { tail -n 20 "$BOUNCER/pgbouncer.log" >&2; return 1; }
    fi
}

# Waits until a query through $1 (a psql connection string) succeeds.
wait_query() {
    local what="$1" conninfo="$2" waited=0
    until PGCONNECT_TIMEOUT=3 "$PGBIN/psql" "$conninfo" -X -tAc "SELECT 1" >/dev/null 2>&1; do
        if [ "$waited" -ge "$WAIT_SECONDS" ]; then
            log "$what does not answer within ${WAIT_SECONDS}s:"
            PGCONNECT_TIMEOUT=3 "$PGBIN/psql" "$conninfo" -X -tAc "SELECT 1" >&2 || true
            return 1
        fi
        sleep 1
        waited=$((waited + 1))
    done
    log "$what answers"
}

start() {
    command -v openssl >/dev/null || { log "openssl is needed"; return 1; }
    [ -x "$PGBIN/initdb" ] || { log "no PostgreSQL binaries in $PGBIN"; return 1; }
    mkdir -p "$DIR"
    chmod 755 "$DIR"
    make_certs
    start_cluster
    start_bouncer
    local tls_url="postgres://postgres:$TLS_PASSWORD@$HOST:$TLS_PORT/test?sslmode=verify-full&sslrootcert=$CERTS/ca.crt"
    wait_query "the TLS cluster on $HOST:$TLS_PORT" \
        "host=$HOST port=$TLS_PORT dbname=test user=postgres password=$TLS_PASSWORD sslmode=verify-full sslrootcert=$CERTS/ca.crt"
    wait_query "pgbouncer on $HOST:$BOUNCER_PORT (needs the plain server on $HOST:$PLAIN_PORT)" \
        "host=$HOST port=$BOUNCER_PORT dbname=test user=postgres sslmode=disable"
    echo "export POSTGRES_TLS_URL='$tls_url'"
    echo "export POSTGRES_TLS_CA='$CERTS/ca.crt'"
    echo "export POSTGRES_TLS_CLIENT_CERT='$CERTS/client.crt'"
    echo "export POSTGRES_TLS_CLIENT_KEY='$CERTS/client.key'"
    echo "export PGBOUNCER_URL='postgres://postgres@$HOST:$BOUNCER_PORT/test'"
}

stop() {
    stop_pidfile "$BOUNCER/pgbouncer.pid" pgbouncer
    if tls_running; then
        log "stopping the TLS cluster"
        as_pg "$PGBIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null || true
    fi
}

start_or_stop "$@"
