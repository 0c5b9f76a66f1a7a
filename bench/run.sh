#!/usr/bin/env bash
# weir's benchmark runner: real tools (sysbench, mysqlslap, mysqldump) against a direct connection
# to the primary, Debian's haproxy (mode tcp, to the primary only), weir, weir with seed 003's
# read/write split rules (weirrw) and, when PROXYSQL_BIN is set, ProxySQL (proxysql, proxysqlrw),
# all in front of the same MariaDB topology (a primary and 2 replicas).
# Targets run interleaved (direct, haproxy, weir, weirrw, direct, haproxy, ...) for several
# rounds; the script prints medians, ratios, each proxy's CPU time per query and the load
# generator's (which alone caps what any target can reach on this machine), and appends a
# dated entry to bench/RESULTS.md.
#
#   bench/run.sh [scenario...]      default: every scenario; bench/run.sh --list to see them
#
# Environment (defaults in brackets):
#   BENCH_ROUNDS [3]          rounds of interleaved runs per scenario
#   BENCH_TIME [20]           seconds per sysbench run
#   BENCH_WARMUP [5]          seconds of unrecorded sysbench warm-up per target
#   BENCH_TABLE_SIZE [100000] rows of the sysbench table (prepared once, directly on the primary)
#   BENCH_SLAP_QUERIES [20000] queries per mysqlslap run at concurrency 1 (4 times as many above)
#   BENCH_BIG_ROWS [5000000]  rows of ~200 bytes (about 1 GiB) of the table sbtest.big that
#                             large_result dumps; created once, on the primary only (not
#                             replicated), and kept while the topology lives
#   BENCH_TARGETS ["direct haproxy weir weirrw", plus "proxysql proxysqlrw" when PROXYSQL_BIN
#                             is set]
#                             weirrw: weir with seed 003's read/write split rules
#                             (`^SELECT.*FOR UPDATE$` to hostgroup 0, the primary; `^SELECT` to
#                             hostgroup 1, the replicas) loaded through its admin interface;
#                             proxysql: ProxySQL with the same servers, user and threads as weir
#                             and no rules; proxysqlrw: the same plus the two rules of weirrw;
#                             weirN (e.g. "weir1 weir2 weir4"): one more weir
#                             instance with threads = N, to compare settings in the same run;
#                             weirrN (e.g. weirr1000): a weir with N query rules loaded that
#                             match none of the workload (seed 004's shape: every query is
#                             checked against all of them)
#                             weirmN (e.g. weirm64): a weir whose primary takes at most N
#                             backend connections (mysql_servers.max_connections)
#                             weirs: a weir that reaches the primary through its Unix socket
#                             weirc: a weir with query cache rules (cache_ttl 60 s) for
#                             `SELECT 1111` and sysbench's point select; weircN: the same
#                             with threads = N
#                             weirbp, weirrwbp: weir and weirrw with mysql-busy_poll_us =
#                             BENCH_BUSY_POLL_US (its workers poll instead of sleeping while
#                             clients are active: lower latency, more CPU)
#                             weirp, weirrwp: weir and weirrw with mysql-pipeline_depth =
#                             BENCH_PIPELINE_DEPTH (autocommit SELECTs of clients in the same
#                             state go to backend connections busy with another's)
#                             weirb: a weir running the binary BENCH_WEIR_B (e.g. a build of
#                             another commit), to compare two builds interleaved in one run
#   PROXYSQL_BIN              a ProxySQL (2.x) binary: enables the targets proxysql and
#                             proxysqlrw, started in the foreground (`-f --initial -c CNF -D DIR`)
#                             with a proxysql.cnf this script writes (libconfig syntax: datadir,
#                             admin_variables, mysql_variables with threads, interfaces,
#                             monitor_enabled=false and server_version, mysql_servers,
#                             mysql_users, mysql_query_rules) and a new datadir under the work
#                             directory. Not tried yet: no ProxySQL binary was available where
#                             this was written (no internet), so the first run with it may need
#                             fixes; these targets fail at once when PROXYSQL_BIN is unset or not
#                             executable.
#   BENCH_BUSY_POLL_US [200]  mysql-busy_poll_us of the targets weirbp and weirrwbp
#   BENCH_PIPELINE_DEPTH [16] mysql-pipeline_depth of the targets weirp and weirrwp
#   BENCH_IDLE_CLIENTS [10000] client connections of the idle_10000 scenario
#   BENCH_WEIR_THREADS [1]    mysql_variables.threads of the targets weir, weirrw and the
#                             ProxySQL ones; 1 measured best here (2 cores, like haproxy's
#                             nbthread 1): see RESULTS.md
#   BENCH_WEIR_PORT, BENCH_WEIR_ADMIN_PORT, BENCH_HAPROXY_PORT [free ports picked at random]
#   BENCH_TOPOLOGY_DIR        reuse the topology whose topology.env is there (left running), or
#                             start one there; default: a new one, stopped at the end
#   BENCH_KEEP_TOPOLOGY [0]   1: leave the topology started in BENCH_TOPOLOGY_DIR running
#   BENCH_RESULTS [bench/RESULTS.md]  where the entry is appended; BENCH_NO_RECORD=1: nowhere
#   WEIR_BIN, TESTKIT_BIN     use these binaries instead of building (release) with cargo
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"

ROUNDS=${BENCH_ROUNDS:-3}
BENCH_TIME=${BENCH_TIME:-20}
WARMUP=${BENCH_WARMUP:-5}
TABLE_SIZE=${BENCH_TABLE_SIZE:-100000}
SLAP_QUERIES=${BENCH_SLAP_QUERIES:-20000}
BUSY_POLL_US=${BENCH_BUSY_POLL_US:-200}
PIPELINE_DEPTH=${BENCH_PIPELINE_DEPTH:-16}
BIG_ROWS=${BENCH_BIG_ROWS:-5000000}
read -r -a TARGETS <<<"${BENCH_TARGETS:-direct haproxy weir weirrw${PROXYSQL_BIN:+ proxysql proxysqlrw}}"
WEIR_THREADS=${BENCH_WEIR_THREADS:-1}
WEIR_PORT=${BENCH_WEIR_PORT:-$(free_port)}
WEIR_ADMIN_PORT=${BENCH_WEIR_ADMIN_PORT:-$(free_port)}
HAPROXY_PORT=${BENCH_HAPROXY_PORT:-$(free_port)}
RESULTS=${BENCH_RESULTS:-$WEIR_ROOT/bench/RESULTS.md}
COMMAND_LINE=""
for var in $(compgen -e | grep -E '^(BENCH_|PROXYSQL_BIN$)' | sort || true); do
    COMMAND_LINE+="$var=$(printf '%q' "${!var}") "
done
COMMAND_LINE+="bench/run.sh${*:+ $(printf '%q ' "$@")}"
COMMAND_LINE=${COMMAND_LINE% }

# --- Scenarios -----------------------------------------------------------------------------------
# A scenario NAME is a function `scenario_NAME TARGET PORT MODE` (MODE: warmup or run) that prints
# "VALUE QUERIES" on its last line of stdout; its metadata sits in the arrays below. UNIT is qps
# (higher is better) or s (lower is better). GOAL, optional: one or more goals separated by ';',
# each "A/B <= X" or "A/B >= X" on medians.
# SCENARIOS (in the order a default run takes them): the sysbench matrix below, then these.
SCENARIOS=()
OTHER_SCENARIOS=(slap_c1 slap_c8 slap_c32 slap_c128 rw_split large_result rules_point_select_8
    multiplex_2000 connect_trx_8 idle_10000 cache_slap_c8 cache_point_select_8 cache_point_select_8_ps)
# ONLY[s]: the targets a scenario runs on (default: all). A goal may also be "TARGET <= X" (an
# absolute value), or "A-B <= X ns/ITEM" for a UNIT s scenario: A's median minus B's, in ns per
# ITEM (ITEM[s]: what the QUERIES figure counts, default query). A scenario may append "- ..."
# note lines to $WORK/notes.
declare -A DESC UNIT GOAL NEEDS ONLY ITEM

# The sysbench matrix (seed 003's thread counts): NAME_THREADS runs the text protocol,
# NAME_THREADS_ps prepared statements; one function per name, all calling sysbench_scenario.
for test in point_select read_only; do
    for threads in 1 8 64 256; do
        for ps in disable auto; do
            name=${test}_$threads protocol="text protocol (--db-ps-mode=disable)" extra=""
            if [ "$ps" = auto ]; then
                name+=_ps protocol="prepared statements (--db-ps-mode=auto)"
            fi
            if [ "$test" = read_only ]; then
                # BEGIN, 10 point selects, 4 range selects of --range_size rows, COMMIT.
                extra=--range_size=100
                protocol="transactions of 10 point selects and 4 range selects of 100 rows (--range_size=100), $protocol"
            fi
            SCENARIOS+=("$name")
            DESC[$name]="sysbench oltp_$test, $protocol, $threads thread$([ "$threads" = 1 ] || echo s), ${BENCH_TIME} s per run, 1 table of ${TABLE_SIZE} rows"
            UNIT[$name]=qps
            NEEDS[$name]=sysbench_tables
            eval "scenario_$name() { sysbench_scenario oltp_$test $threads $ps \"\$@\" $extra; }"
        done
    done
done
unset test threads ps name protocol extra
SCENARIOS+=("${OTHER_SCENARIOS[@]}")
# The issue's goals: weir with the read/write split against haproxy (the primary only) and
# against ProxySQL (evaluated when the proxysql target ran).
GOAL[point_select_8]="weir/haproxy >= 0.8; weirrw/haproxy >= 1.1; weirrwbp/haproxy >= 1.1; weirrwp/haproxy >= 1.1; weirrw/proxysqlrw >= 1.3"
GOAL[point_select_64]="weirrw/haproxy >= 1.1; weirrwbp/haproxy >= 1.1; weirrwp/haproxy >= 1.1; weirrw/proxysqlrw >= 1.3"
DESC[rules_point_select_8]="sysbench oltp_point_select, text protocol, 8 threads, ${BENCH_TIME} s per run: weir with 100 or 1000 non-matching rules (targets weirr100, weirr1000) against weir with none; run with BENCH_TARGETS=\"direct weir weirr100 weirr1000\""
UNIT[rules_point_select_8]=qps
GOAL[rules_point_select_8]="weirr1000/weir >= 0.9"
NEEDS[rules_point_select_8]=sysbench_tables
for c in 1 8 32 128; do
    n=$((c == 1 ? SLAP_QUERIES : SLAP_QUERIES * 4))
    DESC[slap_c$c]="mysqlslap --query=\"SELECT 1111\" --concurrency=$c --number-of-queries=$n --iterations=1 (seconds per run)"
    UNIT[slap_c$c]=s
    eval "scenario_slap_c$c() { slap_scenario $c $n \"\$@\"; }"
done
unset c n
GOAL[slap_c1]="weir/direct <= 1.2; weirbp/direct <= 1.2"
DESC[rw_split]="sysbench oltp_read_write --skip_trx=on (autocommit: 14 selects and 4 writes per event), text protocol, 8 threads, ${BENCH_TIME} s per run: weirrw (and proxysqlrw) send the selects to the replicas, the other targets send everything to the primary; duplicate-key errors of concurrent delete/insert pairs are ignored (--mysql-ignore-errors)"
UNIT[rw_split]=qps
NEEDS[rw_split]=sysbench_tables
DESC[large_result]="mysqldump --single-transaction --skip-lock-tables sbtest big >/dev/null: ${BIG_ROWS} rows of ~200 bytes (~$((BIG_ROWS * 213 / 1048576)) MiB on the wire) streamed through the target (seconds per run; the warm-up dumps a tenth); per-row overhead = (median - direct's median) / rows; the proxy's RSS is sampled every 0.1 s during each dump, its VmHWM (a process-lifetime peak) read after it; the issue: <= 100 ns per row, weir's peak RSS < 64 MiB"
UNIT[large_result]=s
ITEM[large_result]=row
GOAL[large_result]="weir-direct <= 100 ns/row"
NEEDS[large_result]=big_table

DESC[multiplex_2000]="sysbench oltp_point_select, text protocol (autocommit point selects), 2000 threads, ${BENCH_TIME} s per run: weir whose primary takes at most 64 backend connections (target weirm64) against at most 2000 (weirm2000); the most connections each weir had open to the primary is sampled with ss every 0.1 s; run with BENCH_TARGETS=\"weirm64 weirm2000\""
UNIT[multiplex_2000]=qps
GOAL[multiplex_2000]="weirm64/weirm2000 >= 0.9"
NEEDS[multiplex_2000]=sysbench_tables
ONLY[multiplex_2000]="weirm64 weirm2000"
DESC[connect_trx_8]="sysbench bench/connect_per_trx.lua: connect, one point select, disconnect; 8 threads, ${BENCH_TIME} s per run (qps = connections per second)"
UNIT[connect_trx_8]=qps
GOAL[connect_trx_8]="weir/direct >= 1.2"
NEEDS[connect_trx_8]=sysbench_tables
DESC[cache_slap_c8]="mysqlslap --query=\"SELECT 1111\" --concurrency=8 --number-of-queries=$((SLAP_QUERIES * 4)) --iterations=1 (seconds per run); run with BENCH_TARGETS=\"direct weir weirc\" (weirc caches the query)"
UNIT[cache_slap_c8]=s
GOAL[cache_slap_c8]="weirc/direct <= 0.5"
DESC[cache_point_select_8]="sysbench oltp_point_select, text protocol, 8 threads, ${BENCH_TIME} s per run; run with BENCH_TARGETS=\"direct weir weirc\" (weirc caches the point select for 60 s)"
UNIT[cache_point_select_8]=qps
GOAL[cache_point_select_8]="weirc/direct >= 1.5"
NEEDS[cache_point_select_8]=sysbench_tables
DESC[cache_point_select_8_ps]="sysbench oltp_point_select, --db-ps-mode=auto (prepared statements), 8 threads, ${BENCH_TIME} s per run; run with BENCH_TARGETS=\"direct weir weirc\""
UNIT[cache_point_select_8_ps]=qps
GOAL[cache_point_select_8_ps]="weirc/direct >= 1.5"
NEEDS[cache_point_select_8_ps]=sysbench_tables
DESC[idle_10000]="bench/idle_clients.py: ${BENCH_IDLE_CLIENTS:-10000} client connections logged in through weir and left idle; weir's RSS growth per connection (VmRSS with them minus VmRSS before any client connected), KiB"
UNIT[idle_10000]=KiB
GOAL[idle_10000]="weir <= 10"
ONLY[idle_10000]="weir"

sysbench_args() {
    printf '%s\n' --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$1" \
        --mysql-user="$WEIR_USER" --mysql-password="$WEIR_PASS" --mysql-db=sbtest \
        --tables=1 --table-size="$TABLE_SIZE"
}

# Runs a sysbench OLTP test; prints "QPS QUERIES".
run_sysbench() {
    local test=$1 threads=$2 port=$3 secs=$4 out
    shift 4
    local args
    mapfile -t args < <(sysbench_args "$port")
    out=$(sysbench "$test" "${args[@]}" --threads="$threads" --time="$secs" --events=0 \
        --report-interval=0 "$@" run 2>&1) || {
        printf '%s\n' "$out" | tail -n 20 >&2
        return 1
    }
    # "    queries:                             1234567 (61728.12 per sec.)"
    printf '%s\n' "$out" | awk '/^ *queries:/ { gsub(/\(/, "", $3); print $3, $2; found=1 }
        END { exit !found }'
}

# sysbench_scenario TEST THREADS PS_MODE TARGET PORT MODE [SYSBENCH_ARGS...]: a sysbench run of
# BENCH_TIME seconds (BENCH_WARMUP for the warm-up), --db-ps-mode=PS_MODE unless PS_MODE is empty.
sysbench_scenario() {
    local test=$1 threads=$2 ps=$3 port=$5 secs=$BENCH_TIME
    [ "$6" = warmup ] && secs=$WARMUP
    shift 6
    run_sysbench "$test" "$threads" "$port" "$secs" ${ps:+"--db-ps-mode=$ps"} "$@"
}

scenario_rules_point_select_8() { scenario_point_select_8 "$@"; }
scenario_cache_point_select_8() { scenario_point_select_8 "$@"; }
scenario_cache_point_select_8_ps() { scenario_point_select_8_ps "$@"; }

scenario_rw_split() {
    sysbench_scenario oltp_read_write 8 disable "$@" --skip_trx=on \
        --mysql-ignore-errors=1062,1213,1205,1020
}

# sample_every PID FILE COMMAND...: every 0.1 s while PID lives, appends COMMAND's output to FILE.
sample_every() {
    local pid=$1 file=$2
    shift 2
    : >"$file"
    while kill -0 "$pid" 2>/dev/null; do
        "$@" >>"$file" 2>/dev/null || true
        sleep 0.1
    done
}
# start_sampler PID FILE COMMAND...: sample_every in the background; sets SAMPLER_PID.
start_sampler() {
    : >"$2"
    sample_every "$@" >/dev/null &
    SAMPLER_PID=$!
}
# stop_sampler FILE: stops the sampler, prints the largest sample.
stop_sampler() {
    kill "$SAMPLER_PID" 2>/dev/null || true
    wait "$SAMPLER_PID" 2>/dev/null || true
    sort -n "$1" | tail -n 1
}

# backend_conns PID: the TCP connections PID has open to the primary.
backend_conns() {
    ss -Htnp state established "( dport = :$PRIMARY_PORT )" 2>/dev/null | grep -c "pid=$1,"
}

scenario_multiplex_2000() {
    local t=$1 pid=${PID[$1]:-} out peak max
    start_sampler "$pid" "$WORK/conns-$t" backend_conns "$pid"
    out=$(sysbench_scenario oltp_point_select 2000 disable "$@") || {
        stop_sampler "$WORK/conns-$t" >/dev/null
        return 1
    }
    peak=$(stop_sampler "$WORK/conns-$t")
    [ "$3" = warmup ] || echo "- multiplex_2000 round ${round:-?}: $t had at most ${peak:-?} connections open to the primary" >>"$WORK/notes"
    max=${t#weirm}
    if [[ $t == weirm* ]] && [ "${peak:-0}" -gt "$max" ]; then
        echo "$t had $peak connections to the primary, over its max_connections $max" >&2
        return 1
    fi
    printf '%s\n' "$out"
}

scenario_connect_trx_8() { sysbench_scenario "$WEIR_ROOT/bench/connect_per_trx.lua" 8 "" "$@"; }

rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }

scenario_idle_10000() {
    local t=$1 port=$2 n=${BENCH_IDLE_CLIENTS:-10000} pid=${PID[$1]:-} before after py hold i=0
    [ "$3" = warmup ] && n=$((n / 10))
    [ -n "$pid" ] || return 1
    # mysql-max_connections (default 2048) would refuse most of them.
    admin_sql "${ADMIN[$t]}" -e \
        "SET mysql-max_connections = $((n + 1000)); LOAD MYSQL VARIABLES TO RUNTIME" >&2 || return 1
    # Freed memory stays with the allocator: every round compares with the RSS before any
    # idle client ever connected (taken at the warm-up).
    [ -f "$WORK/idle.base" ] || rss_kib "$pid" >"$WORK/idle.base"
    before=$(cat "$WORK/idle.base")
    rm -f "$WORK/idle.in" && mkfifo "$WORK/idle.in"
    python3 "$WEIR_ROOT/bench/idle_clients.py" 127.0.0.1 "$port" "$WEIR_USER" "$WEIR_PASS" "$n" \
        <"$WORK/idle.in" >"$WORK/idle.out" 2>&1 &
    py=$!
    exec {hold}>"$WORK/idle.in"
    until grep -q '^ready' "$WORK/idle.out"; do
        if ! kill -0 "$py" 2>/dev/null || [ $i -gt 1200 ]; then
            exec {hold}>&-
            cat "$WORK/idle.out" >&2
            return 1
        fi
        sleep 0.1
        i=$((i + 1))
    done
    sleep 1
    after=$(rss_kib "$pid")
    exec {hold}>&-
    wait "$py" || true
    [ "$3" = warmup ] || echo "- idle_10000 round ${round:-?}: $t VmRSS $before KiB before, $after KiB with $n idle clients" >>"$WORK/notes"
    awk -v a="$after" -v b="$before" -v n="$n" 'BEGIN { printf "%.2f %d\n", (a - b) / n, n }'
}

# run_slap PORT CONCURRENCY QUERIES: mysqlslap `SELECT 1111`; prints "SECONDS QUERIES".
run_slap() {
    local out
    out=$(mysqlslap --protocol=tcp --host=127.0.0.1 --port="$1" --user="$WEIR_USER" \
        --password="$WEIR_PASS" --create-schema=sbtest --query="SELECT 1111" --concurrency="$2" \
        --number-of-queries="$3" --iterations=1 2>&1) || {
        printf '%s\n' "$out" | tail -n 20 >&2
        return 1
    }
    # "	Average number of seconds to run all queries: 1.234 seconds"
    printf '%s\n' "$out" | awk -v n="$3" '/Average number of seconds to run all queries/ {
        print $(NF-1), n; found=1 } END { exit !found }'
}

# slap_scenario CONCURRENCY QUERIES TARGET PORT MODE: the warm-up runs a tenth of the queries.
slap_scenario() {
    local n=$2
    [ "$5" = warmup ] && n=$((n / 10))
    run_slap "$4" "$1" "$n"
}

scenario_cache_slap_c8() { scenario_slap_c8 "$@"; }

# scenario_large_result TARGET PORT MODE: mysqldump of sbtest.big (a tenth of it for the
# warm-up); prints "SECONDS ROWS". Notes the proxy's largest VmRSS sampled during the dump and
# its VmHWM after it.
scenario_large_result() {
    local t=$1 port=$2 pid=${PID[$1]:-} rows=$BIG_ROWS where=() start end peak hwm verdict=""
    if [ "$3" = warmup ]; then
        rows=$((BIG_ROWS / 10))
        where=(--where="id <= $rows")
    fi
    [ -z "$pid" ] || start_sampler "$pid" "$WORK/rss-$t" rss_kib "$pid"
    start=$(date +%s.%N)
    mysqldump --protocol=tcp -h127.0.0.1 -P"$port" -u"$WEIR_USER" -p"$WEIR_PASS" \
        --single-transaction --skip-lock-tables "${where[@]}" sbtest big >/dev/null || {
        [ -z "$pid" ] || stop_sampler "$WORK/rss-$t" >/dev/null
        return 1
    }
    end=$(date +%s.%N)
    if [ -n "$pid" ]; then
        peak=$(stop_sampler "$WORK/rss-$t")
        hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status")
        if [[ $t == weir* ]]; then
            verdict=met
            [ "${peak:-0}" -lt 65536 ] || verdict="NOT met"
            verdict="; the issue's peak RSS < 65536 KiB (64 MiB) during the dump: $verdict"
        fi
        [ "$3" = warmup ] || echo "- large_result round ${round:-?}: $t VmRSS at most ${peak:-?} KiB during the dump (sampled every 0.1 s), VmHWM $hwm KiB after it (the process's peak since it started, earlier scenarios included)$verdict" >>"$WORK/notes"
    fi
    awk -v s="$start" -v e="$end" -v n="$rows" 'BEGIN { printf "%.3f %d\n", e - s, n }'
}

prepare_sysbench_tables() {
    local args
    mapfile -t args < <(sysbench_args "$PRIMARY_PORT")
    say "preparing the sysbench table directly on the primary (${TABLE_SIZE} rows)"
    sysbench oltp_point_select "${args[@]}" cleanup >/dev/null
    sysbench oltp_point_select "${args[@]}" prepare >/dev/null
}

# primary_sql MARIADB_ARGS...: the mariadb client on the primary (database sbtest), bench user.
primary_sql() {
    mariadb --protocol=tcp -h127.0.0.1 -P"$PRIMARY_PORT" -u"$WEIR_USER" -p"$WEIR_PASS" sbtest "$@"
}
# admin_sql ADMIN_PORT MARIADB_ARGS...: the mariadb client on a proxy's admin interface.
admin_sql() {
    local port=$1
    shift
    mariadb --protocol=tcp -h127.0.0.1 -P"$port" -uadmin -padmin "$@"
}
# runtime_rules ADMIN_PORT: how many query rules the proxy runs with.
runtime_rules() { admin_sql "$1" -Nse 'SELECT COUNT(*) FROM runtime_mysql_query_rules'; }

# sbtest.big for large_result: BIG_ROWS rows (id 1..BIG_ROWS, pad CHAR(200) latin1), on the
# primary only (sql_log_bin = 0: a GiB need not be copied to each replica), filled in one
# INSERT ... SELECT from the Sequence engine's seq_1_to_N (a recursive CTE without it); kept
# for later runs on the same topology.
prepare_big_table() {
    local have source
    have=$(primary_sql -Nse 'SELECT IFNULL(MAX(id), 0) FROM big' 2>/dev/null || echo 0)
    if [ "$have" = "$BIG_ROWS" ]; then
        say "reusing sbtest.big on the primary ($BIG_ROWS rows)"
        return 0
    fi
    say "creating sbtest.big directly on the primary ($BIG_ROWS rows of 200 bytes, not replicated)"
    if [ "$(primary_sql -Nse "SELECT COUNT(*) FROM information_schema.ENGINES WHERE ENGINE = 'SEQUENCE' AND SUPPORT IN ('YES', 'DEFAULT')")" = 1 ]; then
        source="SELECT seq, RPAD(CONCAT(seq, '-'), 200, 'x') FROM seq_1_to_$BIG_ROWS"
    else
        source="WITH RECURSIVE s (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < $BIG_ROWS)
            SELECT n, RPAD(CONCAT(n, '-'), 200, 'x') FROM s"
    fi
    primary_sql -e "SET SESSION sql_log_bin = 0; SET SESSION max_recursive_iterations = $((BIG_ROWS + 1));
        DROP TABLE IF EXISTS big;
        CREATE TABLE big (id INT NOT NULL PRIMARY KEY, pad CHAR(200) NOT NULL) DEFAULT CHARSET = latin1;
        INSERT INTO big (id, pad) $source" || die "could not create sbtest.big on the primary"
}

# --- Targets -------------------------------------------------------------------------------------
# A target has a port (target_port) and, for a proxy, a process whose CPU time is measured.
declare -A PORT PID ADMIN LOG
WEIR_PID=
WEIR_PIDS=()
HAPROXY_PID=
PROXYSQL_PIDS=()
TOPOLOGY_PID=

# wait_answers NAME PID PORT LOG: waits until the proxy answers `SELECT 1` on PORT (10 s at most).
wait_answers() {
    local i=0
    until mariadb --protocol=tcp -h127.0.0.1 -P"$3" -u"$WEIR_USER" -p"$WEIR_PASS" \
        -Nse 'SELECT 1' >/dev/null 2>&1; do
        kill -0 "$2" 2>/dev/null || die "$1 exited: $(tail -n 5 "$4")"
        [ $i -lt 100 ] || die "$1 does not answer on port $3 (log: $4)"
        sleep 0.1
        i=$((i + 1))
    done
}

start_haproxy() {
    local cfg=$WORK/haproxy.cfg
    cat >"$cfg" <<EOF
global
    nbthread 1
    maxconn 4000
defaults
    mode tcp
    timeout connect 5s
    timeout client 1h
    timeout server 1h
listen mysql
    bind 127.0.0.1:$HAPROXY_PORT
    server primary 127.0.0.1:$PRIMARY_PORT
EOF
    haproxy -c -q -f "$cfg" || die "haproxy rejects $cfg"
    start_bg "$WORK/haproxy.log" haproxy -db -f "$cfg"
    HAPROXY_PID=$BG_PID
    wait_answers haproxy "$HAPROXY_PID" "$HAPROXY_PORT" "$WORK/haproxy.log"
}

# Seed 003's read/write split (its hostgroups 1 and 2 are this topology's 0 and 1): locking reads
# to the primary, every other SELECT to the replicas; everything else goes to default_hostgroup 0.
RW_PATTERNS=('^SELECT.*FOR UPDATE$' '^SELECT')
RW_HOSTGROUPS=(0 1)

# check_proxysql TARGET: fails at once unless PROXYSQL_BIN is an executable.
check_proxysql() {
    [ -n "${PROXYSQL_BIN:-}" ] ||
        die "target $1 needs a ProxySQL binary: set PROXYSQL_BIN=/path/to/proxysql (none is installed by this script)"
    [ -x "$PROXYSQL_BIN" ] || die "target $1: PROXYSQL_BIN=$PROXYSQL_BIN is not an executable file"
}

# write_proxysql_config FILE DATADIR PORT ADMIN_PORT RULES: proxysql.cnf (libconfig syntax) in
# front of the loaded topology, shaped like write_weir_config's: hostgroup 0 = the primary,
# hostgroup 1 = the replicas, 200 connections each, the bench user with default_hostgroup 0,
# BENCH_WEIR_THREADS worker threads, no monitor, the primary's server_version; RULES=1 adds the
# read/write split rules.
write_proxysql_config() {
    local file=$1 datadir=$2 port=$3 admin_port=$4 rules=$5 i var version servers=() rows=()
    version=$(primary_sql -Nse 'SELECT VERSION()') || die "the primary does not answer"
    servers+=("{ address=\"127.0.0.1\", port=$PRIMARY_PORT, hostgroup=0, max_connections=200 }")
    for ((i = 1; i <= ${REPLICA_COUNT:-0}; i++)); do
        var=REPLICA${i}_PORT
        servers+=("{ address=\"127.0.0.1\", port=${!var}, hostgroup=1, max_connections=200 }")
    done
    if [ "$rules" = 1 ]; then
        for i in "${!RW_PATTERNS[@]}"; do
            rows+=("{ rule_id=$((i + 1)), active=1, match_pattern=\"${RW_PATTERNS[$i]}\", destination_hostgroup=${RW_HOSTGROUPS[$i]}, apply=1 }")
        done
    fi
    cat >"$file" <<EOF
# ProxySQL in front of a testkit topology: hostgroup 0 = primary (writer), 1 = replicas (readers).
datadir="$datadir"

admin_variables=
{
    admin_credentials="admin:admin"
    mysql_ifaces="127.0.0.1:$admin_port"
}

mysql_variables=
{
    threads=$WEIR_THREADS
    max_connections=4000
    interfaces="127.0.0.1:$port"
    monitor_enabled=false
    server_version="$version"
}

mysql_servers=
(
$(printf '    %s,\n' "${servers[@]}" | sed '$ s/,$//')
)

mysql_users=
(
    { username="$WEIR_USER", password="$WEIR_PASS", default_hostgroup=0 }
)

mysql_query_rules=
(
$([ ${#rows[@]} -eq 0 ] || printf '    %s,\n' "${rows[@]}" | sed '$ s/,$//')
)
EOF
}

# start_proxysql NAME RULES: ProxySQL in the foreground (one process, no angel) on a new datadir.
start_proxysql() {
    local dir=$WORK/$1 port admin_port
    check_proxysql "$1"
    port=$(free_port)
    admin_port=$(free_port)
    mkdir -p "$dir/data"
    write_proxysql_config "$dir/proxysql.cnf" "$dir/data" "$port" "$admin_port" "$2"
    start_bg "$dir/proxysql.log" "$PROXYSQL_BIN" -f --initial -c "$dir/proxysql.cnf" -D "$dir/data"
    PROXYSQL_PIDS+=("$BG_PID")
    PORT[$1]=$port PID[$1]=$BG_PID ADMIN[$1]=$admin_port LOG[$1]=$dir/proxysql.log
    wait_answers "$1" "$BG_PID" "$port" "$dir/proxysql.log"
    if [ "$2" = 1 ]; then
        local n
        n=$(runtime_rules "$admin_port" 2>&1) || true
        if [ "$n" = "${#RW_PATTERNS[@]}" ]; then
            say "$1: $n rules in runtime_mysql_query_rules"
        else
            warn "$1: expected ${#RW_PATTERNS[@]} rules in runtime_mysql_query_rules (admin port $admin_port), got: $n"
        fi
    fi
}

start_targets() {
    local t
    for t in "${TARGETS[@]}"; do
        case $t in
        direct) PORT[direct]=$PRIMARY_PORT ;;
        haproxy)
            require_free_port "$HAPROXY_PORT" haproxy BENCH_HAPROXY_PORT
            start_haproxy
            PORT[haproxy]=$HAPROXY_PORT PID[haproxy]=$HAPROXY_PID LOG[haproxy]=$WORK/haproxy.log
            ;;
        proxysql) start_proxysql "$t" 0 ;;
        proxysqlrw) start_proxysql "$t" 1 ;;
        weirrw)
            local admin_port
            admin_port=$(free_port)
            start_weir_target "$t" "$(free_port)" "$admin_port" "$WEIR_THREADS"
            load_rw_rules "$admin_port"
            ;;
        weir)
            require_free_port "$WEIR_PORT" weir BENCH_WEIR_PORT
            require_free_port "$WEIR_ADMIN_PORT" "weir admin" BENCH_WEIR_ADMIN_PORT
            start_weir_target weir "$WEIR_PORT" "$WEIR_ADMIN_PORT" "$WEIR_THREADS"
            ;;
        weir[1-9] | weir[1-9][0-9]) start_weir_target "$t" "$(free_port)" "$(free_port)" "${t#weir}" ;;
        weirs)
            # The primary through its Unix socket (a proxy on the database host).
            start_weir_with_primary "$t" "hostname = '$PRIMARY_SOCKET', port = 0"
            ;;
        weirm[0-9]*) start_weir_with_primary "$t" "max_connections = ${t#weirm}" ;;
        weirb)
            [ -x "${BENCH_WEIR_B:-}" ] || die "target weirb needs BENCH_WEIR_B=/path/to/another/weir"
            local main_bin=$WEIR_BIN
            WEIR_BIN=$BENCH_WEIR_B
            start_weir_target "$t" "$(free_port)" "$(free_port)" "$WEIR_THREADS"
            WEIR_BIN=$main_bin
            ;;
        weirbp | weirrwbp)
            # weir (or weirrw) with mysql-busy_poll_us: its workers poll instead of sleeping
            # while clients are active.
            start_weir_with_variable "$t" busy_poll_us "$BUSY_POLL_US"
            ;;
        weirp | weirrwp)
            # weir (or weirrw) pipelining the SELECTs of clients in the same state.
            start_weir_with_variable "$t" pipeline_depth "$PIPELINE_DEPTH"
            ;;
        weirc | weirc[1-9])
            local admin_port threads=${t#weirc}
            admin_port=$(free_port)
            start_weir_target "$t" "$(free_port)" "$admin_port" "${threads:-$WEIR_THREADS}"
            load_cache_rules "$admin_port"
            ;;
        weirr[0-9]*)
            local admin_port
            admin_port=$(free_port)
            start_weir_target "$t" "$(free_port)" "$admin_port" "$WEIR_THREADS"
            load_rules "$admin_port" "${t#weirr}"
            ;;
        *) die "unknown target $t (known: direct haproxy proxysql proxysqlrw weir weirrw weirbp weirrwbp weirp weirrwp weirN weirrN weirmN weirs weirc weircN weirb)" ;;
        esac
    done
}

# start_weir_with_variable NAME VARIABLE VALUE: a weir target with mysql-VARIABLE set through
# the admin interface; a target named weirrw* also gets the read/write split rules.
start_weir_with_variable() {
    local admin_port
    admin_port=$(free_port)
    start_weir_target "$1" "$(free_port)" "$admin_port" "$WEIR_THREADS"
    admin_sql "$admin_port" -e "SET mysql-$2 = $3; LOAD MYSQL VARIABLES TO RUNTIME" ||
        die "could not set mysql-$2 on $1"
    [[ $1 != weirrw* ]] || load_rw_rules "$admin_port"
}

# start_weir_with_primary NAME ASSIGNMENTS: a weir target whose primary row (hostgroup 0) gets
# ASSIGNMENTS through the admin interface.
start_weir_with_primary() {
    local admin_port
    admin_port=$(free_port)
    start_weir_target "$1" "$(free_port)" "$admin_port" "$WEIR_THREADS"
    admin_sql "$admin_port" -e \
        "UPDATE mysql_servers SET $2 WHERE hostgroup_id = 0; LOAD MYSQL SERVERS TO RUNTIME" ||
        die "could not set $2 on the primary of $1"
}

# start_weir_target NAME PORT ADMIN_PORT THREADS
start_weir_target() {
    write_weir_config "$WORK/$1.toml" "$2" "$3" "$4"
    start_weir "$WORK/$1.toml" "$WORK/$1-data" "$WORK/$1.log" "$2"
    WEIR_PIDS+=("$WEIR_PID")
    PORT[$1]=$2 PID[$1]=$WEIR_PID ADMIN[$1]=$3 LOG[$1]=$WORK/$1.log
    WEIR_THREADS_OF[$1]=$4
}
declare -A WEIR_THREADS_OF

# load_rules ADMIN_PORT N: N active rules shaped like seed 004's, on tables sbtest2..sbtestN+1 so
# that none matches the workload's sbtest1: every query is checked against all of them.
load_rules() {
    local port=$1 n=$2 i sql
    sql="DELETE FROM mysql_query_rules;"
    for ((i = 1; i <= n; i++)); do
        sql+="INSERT INTO mysql_query_rules (rule_id, active, match_pattern, destination_hostgroup, apply) VALUES ($i, 1, '(from|into|update|into table) sbtest$((i + 1))\\b', 0, 1);"
    done
    sql+="LOAD MYSQL QUERY RULES TO RUNTIME;"
    printf '%s\n' "$sql" | admin_sql "$port" ||
        die "could not load $n rules into weir (admin port $port)"
    say "loaded $n rules: $(runtime_rules "$port") in runtime_mysql_query_rules"
}

# load_rw_rules ADMIN_PORT: the read/write split rules (RW_PATTERNS), as seed 003 loads them.
load_rw_rules() {
    local i values=""
    for i in "${!RW_PATTERNS[@]}"; do
        values+="${values:+, }($((i + 1)), 1, '${RW_PATTERNS[$i]}', ${RW_HOSTGROUPS[$i]}, 1)"
    done
    admin_sql "$1" -e "
        INSERT INTO mysql_query_rules (rule_id, active, match_pattern, destination_hostgroup, apply)
        VALUES $values;
        LOAD MYSQL QUERY RULES TO RUNTIME" || die "could not load the read/write split rules (admin port $1)"
    say "read/write split: $(runtime_rules "$1") rules in runtime_mysql_query_rules"
}

# load_cache_rules ADMIN_PORT: cache seed 000's `SELECT 1111` and sysbench's point select (text
# and prepared) for 60 s.
load_cache_rules() {
    admin_sql "$1" -e "
        INSERT INTO mysql_query_rules (rule_id, active, match_pattern, cache_ttl, apply)
        VALUES (1, 1, '^SELECT 1111\$', 60000, 1), (2, 1, '^SELECT c FROM sbtest1 WHERE id=', 60000, 1);
        LOAD MYSQL QUERY RULES TO RUNTIME" || die "could not load the cache rules (admin port $1)"
}

# CPU time (user + system) of a process, in clock ticks.
cpu_ticks() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || {
        echo 0
        return
    }
    # Fields after "pid (comm) ": state is 1st, utime 12th, stime 13th.
    # shellcheck disable=SC2086 # split into fields on purpose
    set -- ${stat##*) }
    echo $((${12} + ${13}))
}

# CPU time (user + system) of this script's finished children, in clock ticks: the load
# generators (sysbench, mysqlslap...) of a run, once the command substitution around them ended.
children_ticks() {
    local stat
    stat=$(cat /proc/$$/stat)
    # shellcheck disable=SC2086 # split into fields on purpose
    set -- ${stat##*) }
    echo $((${14} + ${15}))
}

# --- Cleanup -------------------------------------------------------------------------------------
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    local pid
    for pid in "${WEIR_PIDS[@]}"; do stop_pid "$pid" weir 30; done
    for pid in "${PROXYSQL_PIDS[@]}"; do stop_pid "$pid" proxysql 30; done
    stop_pid "$HAPROXY_PID" haproxy 10
    stop_pid "$TOPOLOGY_PID" weir-testkit 60
    if [ "$rc" -eq 0 ]; then
        rm -rf "$WORK"
    else
        warn "bench failed: logs kept in $WORK"
    fi
    exit "$rc"
}

# --- Statistics ----------------------------------------------------------------------------------
median() { sort -g | awk 'NF { v[++n] = $1 } END { if (n == 0) exit 1;
    if (n % 2) print v[(n + 1) / 2]; else print (v[n / 2] + v[n / 2 + 1]) / 2 }'; }
fmt_value() {
    case $2 in
    qps) printf '%.0f qps' "$1" ;;
    KiB) printf '%.2f KiB' "$1" ;;
    *) printf '%.3f s' "$1" ;;
    esac
}
# runs_on SCENARIO TARGET: whether the scenario runs on that target.
runs_on() { [ -z "${ONLY[$1]:-}" ] || [[ " ${ONLY[$1]} " == *" $2 "* ]]; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
# items_per_run TARGET: the QUERIES figure of one of TARGET's runs of this scenario.
items_per_run() {
    awk -v q="${QUERIES[$1]:-0}" -v n="$(wc -w <<<"${VALUES[$1]:-}")" \
        'BEGIN { if (n > 0) print q / n; else print 0 }'
}
# overhead_ns A B: A's median minus B's, in ns per item (query, row) of a run (UNIT s).
overhead_ns() {
    awk -v a="${MED[$1]}" -v b="${MED[$2]}" -v n="$(items_per_run "$1")" \
        'BEGIN { if (n > 0) printf "%.0f", (a - b) / n * 1e9; else print "n/a" }'
}
# goal_verdict GOAL: "GOAL: met (X)", "GOAL: NOT met (X)" or "GOAL: no data", X computed from
# this scenario's medians (MED): A/B a ratio, A-B an overhead in ns per item, A a median.
goal_verdict() {
    local pair op limit unit a b r=""
    read -r pair op limit unit <<<"$1"
    case $pair in
    */* | *-*)
        a=${pair%[/-]*} b=${pair#*[/-]}
        if [ -n "${MED[$a]:-}" ] && [ -n "${MED[$b]:-}" ]; then
            if [[ $pair == */* ]]; then r=$(ratio "${MED[$a]}" "${MED[$b]}"); else r=$(overhead_ns "$a" "$b"); fi
        fi
        ;;
    *) r=${MED[$pair]:-} ;;
    esac
    set -- "$pair $op $limit${unit:+ $unit}"
    if [ -z "$r" ] || [ "$r" = n/a ]; then
        echo "$1: no data"
    elif awk -v r="$r" -v l="$limit" -v op="$op" 'BEGIN { exit !(op == ">=" ? r >= l : r <= l) }'; then
        echo "$1: met ($r)"
    else
        echo "$1: NOT met ($r)"
    fi
}

# --- Main ----------------------------------------------------------------------------------------
if [ "${1:-}" = --list ]; then
    for s in "${SCENARIOS[@]}"; do
        printf '%-24s %s\n' "$s" "${DESC[$s]}"
        [ -z "${GOAL[$s]:-}" ] || printf '%-24s goal: %s\n' "" "${GOAL[$s]}"
    done
    exit 0
fi
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'
    exit 0
fi
RUN_SCENARIOS=("$@")
[ ${#RUN_SCENARIOS[@]} -gt 0 ] || RUN_SCENARIOS=("${SCENARIOS[@]}")
for s in "${RUN_SCENARIOS[@]}"; do
    [ -n "${DESC[$s]:-}" ] || die "unknown scenario $s (bench/run.sh --list)"
done
for t in "${TARGETS[@]}"; do
    case $t in proxysql | proxysqlrw) check_proxysql "$t" ;; esac
done

ensure_packages mariadbd:mariadb-server mariadb-install-db:mariadb-server mariadb:mariadb-client \
    mysqlslap:mariadb-client mysqldump:mariadb-client sysbench:sysbench haproxy:haproxy
build_release
WORK=$(mktemp -d /tmp/weir-bench.XXXXXX)
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ -n "${BENCH_TOPOLOGY_DIR:-}" ] && [ -f "$BENCH_TOPOLOGY_DIR/topology.env" ]; then
    load_topology "$BENCH_TOPOLOGY_DIR"
    say "reusing the topology of $BENCH_TOPOLOGY_DIR (primary on port $PRIMARY_PORT)"
else
    say "starting a topology (primary + 2 replicas)"
    start_topology "${BENCH_TOPOLOGY_DIR:-$WORK/topology}" "$WORK/testkit.log"
    if [ -n "${BENCH_TOPOLOGY_DIR:-}" ] && [ "${BENCH_KEEP_TOPOLOGY:-0}" = 1 ]; then
        say "the topology stays up for later runs: kill $TOPOLOGY_PID to stop it"
        TOPOLOGY_PID=
    fi
fi
mariadb --protocol=tcp -h127.0.0.1 -P"$PRIMARY_PORT" -u"$WEIR_USER" -p"$WEIR_PASS" \
    -Nse 'SELECT 1' >/dev/null || die "the primary on port $PRIMARY_PORT does not answer"
start_targets
# The primary's mariadbd, whose CPU time per query is noted too (a proxy shifts work off it).
PRIMARY_PID=$(ss -Hltnp "( sport = :$PRIMARY_PORT )" 2>/dev/null | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2 || true)

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
DATE_START=$(date -u '+%Y-%m-%d %H:%M UTC')
declare -A PREPARED
FAILURES=()
LOGS=""
TABLE="| scenario | $(printf '%s | ' "${TARGETS[@]}")ratios (median/median) | goal |"$'\n'
TABLE+="|---|$(printf -- '---|%.0s' "${TARGETS[@]}")---|---|"$'\n'
NOTES=""
for s in "${RUN_SCENARIOS[@]}"; do
    need=${NEEDS[$s]:-}
    if [ -n "$need" ] && [ -z "${PREPARED[$need]:-}" ]; then
        "prepare_$need"
        PREPARED[$need]=1
    fi
    say "$s: ${DESC[$s]}"
    declare -A VALUES=() CPU=() QUERIES=() PCPU=() CCPU=()
    for t in "${TARGETS[@]}"; do
        runs_on "$s" "$t" || continue
        "scenario_$s" "$t" "${PORT[$t]}" warmup >/dev/null ||
            warn "$s: warm-up through $t failed"
        VALUES[$t]="" CPU[$t]=0 QUERIES[$t]=0 PCPU[$t]=0 CCPU[$t]=0
    done
    for ((round = 1; round <= ROUNDS; round++)); do
        for t in "${TARGETS[@]}"; do
            runs_on "$s" "$t" || continue
            pid=${PID[$t]:-}
            if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
                FAILURES+=("$s round $round: $t is not running (it died earlier)")
                continue
            fi
            before=0
            [ -n "$pid" ] && before=$(cpu_ticks "$pid")
            pbefore=0
            [ -z "$PRIMARY_PID" ] || pbefore=$(cpu_ticks "$PRIMARY_PID")
            cbefore=$(children_ticks)
            if result=$("scenario_$s" "$t" "${PORT[$t]}" run 2>"$WORK/err"); then
                read -r value queries <<<"$(tail -n 1 <<<"$result")"
                VALUES[$t]+="$value "
                QUERIES[$t]=$((QUERIES[$t] + queries))
                if [ -n "$pid" ]; then CPU[$t]=$((CPU[$t] + $(cpu_ticks "$pid") - before)); fi
                [ -z "$PRIMARY_PID" ] || PCPU[$t]=$((PCPU[$t] + $(cpu_ticks "$PRIMARY_PID") - pbefore))
                CCPU[$t]=$((CCPU[$t] + $(children_ticks) - cbefore))
                printf '  round %d  %-10s %s\n' "$round" "$t" "$(fmt_value "$value" "${UNIT[$s]}")"
            else
                FAILURES+=("$s round $round: $t failed: $(tail -n 3 "$WORK/err" | tr '\n' ' ')")
                printf '  round %d  %-10s FAILED\n' "$round" "$t"
                tail -n 5 "$WORK/err" | sed 's/^/    /'
            fi
        done
    done
    declare -A MED=()
    row="| $s |"
    for t in "${TARGETS[@]}"; do
        if ! runs_on "$s" "$t"; then
            MED[$t]=""
            row+=" - |"
            continue
        fi
        # shellcheck disable=SC2086 # one value per word
        if MED[$t]=$(printf '%s\n' ${VALUES[$t]} | median); then
            row+=" $(fmt_value "${MED[$t]}" "${UNIT[$s]}") |"
        else
            MED[$t]=""
            row+=" FAILED |"
        fi
    done
    ratios=""
    pairs=()
    for t in "${TARGETS[@]}"; do [ "$t" = direct ] || pairs+=("$t/direct"); done
    for t in "${TARGETS[@]}"; do [[ $t != weir* ]] || pairs+=("$t/haproxy" "$t/proxysql"); done
    pairs+=(weirrw/proxysqlrw weirrw/weir proxysqlrw/proxysql)
    for pair in "${pairs[@]}"; do
        a=${pair%/*} b=${pair#*/}
        if [ -n "${MED[$a]:-}" ] && [ -n "${MED[$b]:-}" ]; then
            ratios+="$pair $(ratio "${MED[$a]}" "${MED[$b]}"), "
        fi
    done
    verdict=""
    IFS=';' read -r -a goals <<<"${GOAL[$s]:-}"
    for goal in "${goals[@]}"; do verdict+="${verdict:+; }$(goal_verdict "$goal")"; done
    row+=" ${ratios%, } | ${verdict:--} |"
    TABLE+="$row"$'\n'
    ticks_per_s=$(getconf CLK_TCK)
    item=${ITEM[$s]:-query} items=queries
    [ -z "${ITEM[$s]:-}" ] || items=${ITEM[$s]}s
    for t in "${TARGETS[@]}"; do
        if [ -n "$PRIMARY_PID" ] && [ "${QUERIES[$t]:-0}" -gt 0 ]; then
            NOTES+="- $s: primary mariadbd CPU time under $t $(awk -v c="${PCPU[$t]}" -v hz="$ticks_per_s" -v q="${QUERIES[$t]}" -v i="$item" \
                'BEGIN { printf "%.2f µs/%s", c / hz / q * 1e6, i }')"$'\n'
        fi
        if [ "${QUERIES[$t]:-0}" -gt 0 ]; then
            # What the client side alone costs bounds any target's throughput on this machine.
            NOTES+="- $s: load generator CPU time under $t $(awk -v c="${CCPU[$t]}" -v hz="$ticks_per_s" -v q="${QUERIES[$t]}" -v i="$item" -v is="$items" -v n="$(nproc)" \
                'BEGIN { us = c / hz / q * 1e6; printf "%.2f µs/%s", us, i; if (us > 0) printf " (alone, it would keep %d cores busy at %.0f %s per second)", n, n / us * 1e6, is }')"$'\n'
        fi
        if [ "${UNIT[$s]}" = s ] && [ "$t" != direct ] && [ -n "${MED[$t]:-}" ] && [ -n "${MED[direct]:-}" ]; then
            NOTES+="- $s: $t overhead over direct: $(overhead_ns "$t" direct) ns/$item (median minus direct's median, over $(items_per_run "$t") $items per run)"$'\n'
        fi
        if [ -z "${PID[$t]:-}" ] || [ "${QUERIES[$t]:-0}" -eq 0 ]; then continue; fi
        NOTES+="- $s: $t CPU time $(awk -v c="${CPU[$t]}" -v hz="$ticks_per_s" -v q="${QUERIES[$t]}" -v i="$item" -v is="$items" \
            'BEGIN { printf "%.2f µs/%s (%.2f s over %d %s)", c / hz / q * 1e6, i, c / hz, q, is }')"$'\n'
    done
    for t in "${TARGETS[@]}"; do
        runs_on "$s" "$t" || continue
        NOTES+="- $s: $t runs: ${VALUES[$t]:-none}"$'\n'
    done
done

# Every proxy: still running (its peak RSS) or died (its log); weir's WARN/ERROR log lines.
for t in "${TARGETS[@]}"; do
    log=${LOG[$t]:-} pid=${PID[$t]:-}
    [ -n "$pid" ] || continue
    if [ -n "${WEIR_THREADS_OF[$t]:-}" ]; then
        problems=$(grep -cE ' (WARN|ERROR) ' "$log" || true)
        NOTES+="- $t (threads = ${WEIR_THREADS_OF[$t]}) log: $problems WARN/ERROR lines"
        if [ "$problems" -gt 0 ]; then
            NOTES+=", the last ones: $(grep -E ' (WARN|ERROR) ' "$log" | tail -n 3 | tr '\n' ' ')"
        fi
        NOTES+=$'\n'
    fi
    if kill -0 "$pid" 2>/dev/null; then
        NOTES+="- $t peak RSS: $(awk '/VmHWM/ { print $2, $3 }' "/proc/$pid/status")"$'\n'
    else
        status=0
        wait "$pid" 2>/dev/null || status=$?
        [ "$status" -le 128 ] || status="$status (signal $((status - 128)))"
        FAILURES+=("$t died during the bench, exit status $status; the end of its log is below")
        LOGS+="$t log (last 20 lines):"$'\n```\n'"$(tail -n 20 "$log")"$'\n```\n'
    fi
done

[ ! -f "$WORK/notes" ] || NOTES+=$(cat "$WORK/notes")$'\n'
printf '\n%s\n%s' "$TABLE" "$NOTES"
for f in "${FAILURES[@]}"; do printf 'FAILURE: %s\n' "$f"; done
printf '%s' "$LOGS"

if [ "${BENCH_NO_RECORD:-0}" != 1 ]; then
    commit=$(git -C "$WEIR_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
    if [ -n "$(git -C "$WEIR_ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
        commit+=" + uncommitted changes"
    fi
    {
        printf '\n## %s — commit %s\n\n' "$DATE_START" "$commit"
        printf -- '- machine: %s cores (nproc), %s, %s\n' "$(nproc)" \
            "$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)" \
            "$(. /etc/os-release && echo "$PRETTY_NAME")"
        printf -- '- software: %s; %s; %s; haproxy %s (nbthread 1, mode tcp); weir threads = %s\n' \
            "$(mariadb --protocol=tcp -h127.0.0.1 -P"$PRIMARY_PORT" -u"$WEIR_USER" \
                -p"$WEIR_PASS" -Nse 'SELECT CONCAT("MariaDB ", VERSION())')" \
            "$(sysbench --version)" "$(mysqlslap --version | sed -e 's/,* for .*//' -e 's/  */ /g')" \
            "$(haproxy -v | awk 'NR == 1 { print $3 }')" "$(for t in "${TARGETS[@]}"; do
                [ -z "${WEIR_THREADS_OF[$t]:-}" ] || printf '%s (%s) ' "${WEIR_THREADS_OF[$t]}" "$t"
            done)"
        [ ${#PROXYSQL_PIDS[@]} -eq 0 ] || printf -- '- ProxySQL: %s (mysql-threads %s, monitor disabled)\n' \
            "$("$PROXYSQL_BIN" --version 2>&1 | head -n 1)" "$WEIR_THREADS"
        # shellcheck disable=SC2016 # literal backquotes (markdown)
        printf -- '- command: `%s`\n' "$COMMAND_LINE"
        printf -- '- %s rounds, targets interleaved: %s; load average before: %s, after: %s\n' \
            "$ROUNDS" "${TARGETS[*]}" "$LOAD_START" "$(cut -d' ' -f1-3 /proc/loadavg)"
        for s in "${RUN_SCENARIOS[@]}"; do printf -- '- %s: %s\n' "$s" "${DESC[$s]}"; done
        printf '\n%s\n%s' "$TABLE" "$NOTES"
        for f in "${FAILURES[@]}"; do printf -- '- FAILURE: %s\n' "$f"; done
        [ -z "$LOGS" ] || printf '\n%s' "$LOGS"
    } >>"$RESULTS"
    say "appended to $RESULTS"
fi
[ ${#FAILURES[@]} -eq 0 ] || exit 1
