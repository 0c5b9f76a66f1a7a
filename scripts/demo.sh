#!/usr/bin/env bash
# weir quickstart: installs what is missing, builds weir, starts a MariaDB primary with two
# replicas and weir in front of them, and shows queries going through.
#
#   scripts/demo.sh              stay in the foreground until Ctrl-C, then clean up
#   scripts/demo.sh --no-wait    show the queries, clean up and exit (also: DEMO_EXIT=1)
#
# Environment: WEIR_PORT (default 6033), WEIR_ADMIN_PORT (default 6032), WEIR_THREADS (default 2),
# DEMO_DIR (default: a new directory under /tmp; removed on exit unless DEMO_KEEP=1),
# WEIR_BIN and TESTKIT_BIN (use these binaries instead of building).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

DEMO_EXIT=${DEMO_EXIT:-0}
for arg in "$@"; do
    case $arg in
    --no-wait) DEMO_EXIT=1 ;;
    -h | --help)
        usage
        exit 0
        ;;
    *)
        usage >&2
        die "unknown argument: $arg"
        ;;
    esac
done

WEIR_PORT=${WEIR_PORT:-6033}
WEIR_ADMIN_PORT=${WEIR_ADMIN_PORT:-6032}
WEIR_THREADS=${WEIR_THREADS:-2}

# 1. What the demo needs: MariaDB server and client, a C linker for Rust, cargo.
ensure_packages mariadbd:mariadb-server mariadb-install-db:mariadb-server mariadb:mariadb-client \
    cc:build-essential
ensure_cargo
require_free_port "$WEIR_PORT" "weir's SQL port" WEIR_PORT
require_free_port "$WEIR_ADMIN_PORT" "weir's admin port" WEIR_ADMIN_PORT

build_release

# 2. Cleanup of everything started below, whatever happens (error, Ctrl-C, normal exit).
CREATED_DIR=0
if [ -z "${DEMO_DIR:-}" ]; then
    DEMO_DIR=$(mktemp -d /tmp/weir-demo.XXXXXX)
    CREATED_DIR=1
fi
WEIR_PID=
TOPOLOGY_PID=
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ -n "$WEIR_PID" ]; then
        say "stopping weir"
        stop_pid "$WEIR_PID" weir 30
    fi
    if [ -n "$TOPOLOGY_PID" ]; then
        say "stopping the MariaDB servers"
        stop_pid "$TOPOLOGY_PID" weir-testkit 60
    fi
    if [ "$rc" -ne 0 ]; then
        warn "the demo failed: logs are kept in $DEMO_DIR"
    elif [ "$CREATED_DIR" = 1 ] && [ "${DEMO_KEEP:-0}" != 1 ]; then
        rm -rf "$DEMO_DIR"
    else
        say "kept $DEMO_DIR"
    fi
    exit "$rc"
}
WAITING=0
# shellcheck disable=SC2317 # invoked by the INT and TERM traps
stop_requested() {
    # Ctrl-C while the demo waits is the normal way to end it; before that it is an abort.
    if [ "$WAITING" = 1 ]; then exit 0; else exit "$1"; fi
}
trap cleanup EXIT
trap 'stop_requested 130' INT
trap 'stop_requested 143' TERM

# 3. A primary and two replicas with GTID replication, on free ports.
say "starting MariaDB: a primary and 2 replicas in $DEMO_DIR/topology"
start_topology "$DEMO_DIR/topology" "$DEMO_DIR/testkit.log"
printf '    primary   127.0.0.1:%s\n    replica1  127.0.0.1:%s\n    replica2  127.0.0.1:%s\n' \
    "$PRIMARY_PORT" "$REPLICA1_PORT" "$REPLICA2_PORT"

# 4. weir in front of them.
CONFIG=$DEMO_DIR/weir.toml
write_weir_config "$CONFIG" "$WEIR_PORT" "$WEIR_ADMIN_PORT" "$WEIR_THREADS"
say "weir configuration ($CONFIG):"
sed 's/^/    /' "$CONFIG"
"$WEIR_BIN" check-config -c "$CONFIG"
say "starting weir on 127.0.0.1:$WEIR_PORT (log: $DEMO_DIR/weir.log)"
start_weir "$CONFIG" "$DEMO_DIR/weir-data" "$DEMO_DIR/weir.log" "$WEIR_PORT"

# 5. Queries through weir and directly.
sql() {
    local port=$1
    shift
    mariadb --protocol=tcp -h127.0.0.1 -P"$port" -u"$WEIR_USER" -p"$WEIR_PASS" "$@"
}
# show PORT DB SQL: prints the command and the statements, then runs them.
show() {
    printf '\n$ mariadb -h127.0.0.1 -P%s -u%s -p%s %s\n' "$1" "$WEIR_USER" "$WEIR_PASS" "$2"
    printf '%s\n' "$3" | sed 's/^/  > /'
    sql "$1" -t "$2" -e "$3"
}
WHO='SELECT @@hostname, @@port, @@server_id, @@read_only'

say "which server answers through weir? (every statement goes to the user's default hostgroup 0)"
show "$WEIR_PORT" "" "$WHO;"
say "the same question asked directly to the primary and each replica"
for server in primary:"$PRIMARY_PORT" replica1:"$REPLICA1_PORT" replica2:"$REPLICA2_PORT"; do
    sql "${server#*:}" -t -e "SELECT '${server%%:*}' AS server, ${WHO#SELECT }"
done

say "a table created, written and read through weir"
show "$WEIR_PORT" weirtest "DROP TABLE IF EXISTS demo;
CREATE TABLE demo (id INT AUTO_INCREMENT PRIMARY KEY, msg VARCHAR(100) NOT NULL,
                   written_on INT NOT NULL, at TIMESTAMP(6) DEFAULT CURRENT_TIMESTAMP(6));
INSERT INTO demo (msg, written_on) VALUES ('hello through weir', @@server_id);
SELECT * FROM demo;"

say "the admin interface: what weir runs now, and its connection pool"
printf '\n$ mariadb -h127.0.0.1 -P%s -uadmin -padmin\n' "$WEIR_ADMIN_PORT"
ADMIN_SQL='SELECT hostgroup_id, hostname, port, status, weight FROM runtime_mysql_servers;
SELECT hostgroup, srv_host, srv_port, status, ConnUsed, ConnFree, Queries FROM stats_mysql_connection_pool;'
printf '%s\n' "$ADMIN_SQL" | sed 's/^/  > /'
mariadb --protocol=tcp -h127.0.0.1 -P"$WEIR_ADMIN_PORT" -uadmin -padmin -t -e "$ADMIN_SQL"

say "the row replicated to replica1 (asked directly on port $REPLICA1_PORT)"
i=0
until [ "$(sql "$REPLICA1_PORT" -Nse 'SELECT COUNT(*) FROM weirtest.demo' 2>/dev/null)" = 1 ]; do
    [ $i -lt 100 ] || die "the row did not reach replica1 within 10 s"
    sleep 0.1
    i=$((i + 1))
done
sql "$REPLICA1_PORT" -t -e 'SELECT @@port AS replica_port, demo.* FROM weirtest.demo'

say "weir is running"
cat <<EOF
    connect:   mysql -h127.0.0.1 -P$WEIR_PORT -u$WEIR_USER -p$WEIR_PASS weirtest
               (or the mariadb client; the user weir exists on every server)
    admin:     mysql -h127.0.0.1 -P$WEIR_ADMIN_PORT -uadmin -padmin
               (ProxySQL-style admin: SELECT * FROM runtime_mysql_servers; see docs/admin.md)
    primary:   mysql -h127.0.0.1 -P$PRIMARY_PORT -u$WEIR_USER -p$WEIR_PASS
    replicas:  ports $REPLICA1_PORT and $REPLICA2_PORT, same user
    config:    $CONFIG
    weir log:  $DEMO_DIR/weir.log
EOF

if [ "$DEMO_EXIT" = 1 ]; then
    say "demo done (--no-wait): cleaning up"
    exit 0
fi
say "press Ctrl-C to stop weir and the servers"
WAITING=1
# Returns when weir or the servers stop by themselves; Ctrl-C runs the trap instead.
set +e
wait -n "$WEIR_PID" "$TOPOLOGY_PID"
set -e
if ! kill -0 "$WEIR_PID" 2>/dev/null; then
    WEIR_PID=
    tail -n 20 "$DEMO_DIR/weir.log" >&2 || true
    die "weir stopped unexpectedly (log: $DEMO_DIR/weir.log)"
fi
TOPOLOGY_PID=
die "the MariaDB topology stopped unexpectedly (log: $DEMO_DIR/testkit.log)"
