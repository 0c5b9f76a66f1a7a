#!/usr/bin/env bash
# Planned primary switchover for a MariaDB topology behind weir (the demo's, or the test kit's),
# with no error reaching applications: their statements wait in weir (up to
# mysql-connect_timeout_server_max) while the primary changes.
#
#   scripts/switchover.sh TOPOLOGY_DIR NEW_PRIMARY_PORT
#
# TOPOLOGY_DIR holds the test kit's topology.env (users and passwords); the current primary is
# the server weir has in the writer hostgroup. Steps: the primary goes OFFLINE_SOFT in weir;
# once none of its connections is in use (transactions in flight finished) it is made read
# only; the new primary catches up (its gtid_current_pos reaches the old primary's binlog
# position), stops replicating and becomes writable;
# the other servers, the old primary included, replicate from it; weir's writer hostgroup
# points at it and the old primary joins the readers.
#
# Environment: WEIR_ADMIN_PORT [6032], ADMIN_USER [admin], ADMIN_PASS [admin],
# WRITER_HG [0], READER_HG [1], DRAIN_TIMEOUT_S [5]: how long steps 2 and 3 may each take.
# Keep it well under weir's mysql-connect_timeout_server_max (10 s by default): statements
# wait in weir meanwhile, and should the switchover be abandoned they must get the old primary
# back before their wait runs out.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ $# -eq 2 ] || die "usage: scripts/switchover.sh TOPOLOGY_DIR NEW_PRIMARY_PORT"
load_topology "$1"
NEW=$2
ADMIN_PORT=${WEIR_ADMIN_PORT:-6032}
WRITER_HG=${WRITER_HG:-0}
READER_HG=${READER_HG:-1}
DRAIN_TIMEOUT_S=${DRAIN_TIMEOUT_S:-5}
[[ $DRAIN_TIMEOUT_S =~ ^[0-9]+(\.[0-9]{1,3})?$ ]] || die "DRAIN_TIMEOUT_S=$DRAIN_TIMEOUT_S: expected seconds, e.g. 5 or 2.5"

# Milliseconds since the epoch (bash's clock: no process per look).
now_ms() {
    local t=${EPOCHREALTIME/[.,]/}
    echo $((t / 1000))
}
# The moment DRAIN_TIMEOUT_S from now, in milliseconds.
drain_deadline() {
    local whole=${DRAIN_TIMEOUT_S%%.*} frac=000
    [[ $DRAIN_TIMEOUT_S != *.* ]] || frac=${DRAIN_TIMEOUT_S#*.}000
    echo $(($(now_ms) + whole * 1000 + 10#${frac:0:3}))
}

admin() {
    mariadb --protocol=tcp -h127.0.0.1 -P"$ADMIN_PORT" -u"${ADMIN_USER:-admin}" \
        -p"${ADMIN_PASS:-admin}" -Nse "$1"
}
# on PORT SQL: runs SQL on a database server.
on() {
    mariadb --protocol=tcp -h127.0.0.1 -P"$1" -u"$WEIR_USER" -p"$WEIR_PASS" -Nse "$2"
}

OLD=$(admin "SELECT port FROM runtime_mysql_servers WHERE hostgroup_id = $WRITER_HG LIMIT 1")
[ -n "$OLD" ] || die "no server in writer hostgroup $WRITER_HG"
[ "$OLD" != "$NEW" ] || die "port $NEW is already the primary"
ALL_PORTS=()
for ((i = 0; i <= ${REPLICA_COUNT:-0}; i++)); do
    if [ "$i" -eq 0 ]; then var=PRIMARY_PORT; else var=REPLICA${i}_PORT; fi
    ALL_PORTS+=("${!var}")
done
[[ " ${ALL_PORTS[*]} " == *" $NEW "* ]] || die "port $NEW is not a server of $1"
say "switchover: primary $OLD -> $NEW"

# 1. No new work for the old primary; statements for the writer hostgroup wait in weir.
admin "UPDATE mysql_servers SET status = 'OFFLINE_SOFT' WHERE hostgroup_id = $WRITER_HG AND port = $OLD;
       LOAD MYSQL SERVERS TO RUNTIME"
# 2. Transactions in flight finish.
deadline=$(drain_deadline)
until [ "$(admin "SELECT COALESCE(SUM(ConnUsed), 0) FROM stats_mysql_connection_pool
        WHERE hostgroup = $WRITER_HG AND srv_port = $OLD")" = 0 ]; do
    if [ "$(now_ms)" -ge "$deadline" ]; then
        admin "UPDATE mysql_servers SET status = 'ONLINE' WHERE hostgroup_id = $WRITER_HG AND port = $OLD;
               LOAD MYSQL SERVERS TO RUNTIME"
        die "connections to $OLD still in use after ${DRAIN_TIMEOUT_S} s: switchover abandoned, $OLD back ONLINE"
    fi
    sleep 0.05
done
# 3. The old primary stops taking writes; the new one catches up and becomes writable.
on "$OLD" "SET GLOBAL read_only = 1"
pos=$(on "$OLD" "SELECT @@gtid_binlog_pos")
deadline=$(drain_deadline)
# gtid_current_pos: what the server applied, whether it came through replication or (with
# log_slave_updates) went to its own binlog.
until [ "$(on "$NEW" "SELECT @@gtid_current_pos")" = "$pos" ]; do
    if [ "$(now_ms)" -ge "$deadline" ]; then
        die "port $NEW did not reach GTID $pos in ${DRAIN_TIMEOUT_S} s (at: $(on "$NEW" "SELECT CONCAT('[', @@gtid_slave_pos, '] [', @@gtid_current_pos, '] ', @@port)"); old primary: $(on "$OLD" "SELECT CONCAT('[', @@gtid_binlog_pos, '] ', @@port)"))"
    fi
    sleep 0.02
done
on "$NEW" "STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = 0"
# 4. Everyone else replicates from the new primary, from what it applied itself (current_pos:
# the old primary's own binlog, the replicas' applied transactions).
for port in "${ALL_PORTS[@]}"; do
    [ "$port" != "$NEW" ] || continue
    on "$port" "STOP SLAVE; CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = $NEW,
        MASTER_USER = '$REPL_USER', MASTER_PASSWORD = '$REPL_PASS', MASTER_USE_GTID = current_pos,
        MASTER_CONNECT_RETRY = 1; SET GLOBAL read_only = 1; START SLAVE"
done
# 5. weir: the new primary takes the writer hostgroup, the old one joins the readers.
admin "DELETE FROM mysql_servers WHERE port IN ($OLD, $NEW) AND hostgroup_id IN ($WRITER_HG, $READER_HG);
       INSERT INTO mysql_servers (hostgroup_id, hostname, port) VALUES ($WRITER_HG, '127.0.0.1', $NEW);
       INSERT INTO mysql_servers (hostgroup_id, hostname, port) VALUES ($READER_HG, '127.0.0.1', $OLD);
       LOAD MYSQL SERVERS TO RUNTIME; SAVE MYSQL SERVERS TO DISK"
say "switchover done: primary is now $NEW"
