#!/usr/bin/env bash
# weir's benchmark runner: real tools (sysbench, mysqlslap) against a direct connection to the
# primary, Debian's haproxy (mode tcp) and weir, all in front of the same MariaDB primary.
# Targets run interleaved (direct, haproxy, weir, direct, haproxy, weir, ...) for several rounds;
# the script prints medians, ratios and weir's CPU time per query, and appends a dated entry to
# bench/RESULTS.md.
#
#   bench/run.sh [scenario...]      default: every scenario; bench/run.sh --list to see them
#
# Environment (defaults in brackets):
#   BENCH_ROUNDS [3]          rounds of interleaved runs per scenario
#   BENCH_TIME [20]           seconds per sysbench run
#   BENCH_WARMUP [5]          seconds of unrecorded sysbench warm-up per target
#   BENCH_TABLE_SIZE [100000] rows of the sysbench table (prepared once, directly on the primary)
#   BENCH_SLAP_QUERIES [20000] queries per mysqlslap run
#   BENCH_TARGETS ["direct haproxy weir"]  weirN (e.g. "weir1 weir2 weir4"): one more weir
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
#   BENCH_IDLE_CLIENTS [10000] client connections of the idle_10000 scenario
#   BENCH_WEIR_THREADS [1]    mysql_variables.threads of the target "weir"; 1 measured best
#                             here (2 cores, like haproxy's nbthread 1): see RESULTS.md
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
read -r -a TARGETS <<<"${BENCH_TARGETS:-direct haproxy weir}"
WEIR_THREADS=${BENCH_WEIR_THREADS:-1}
WEIR_PORT=${BENCH_WEIR_PORT:-$(free_port)}
WEIR_ADMIN_PORT=${BENCH_WEIR_ADMIN_PORT:-$(free_port)}
HAPROXY_PORT=${BENCH_HAPROXY_PORT:-$(free_port)}
RESULTS=${BENCH_RESULTS:-$WEIR_ROOT/bench/RESULTS.md}
COMMAND_LINE=""
for var in $(compgen -e | grep -E '^BENCH_' | sort || true); do
    COMMAND_LINE+="$var=$(printf '%q' "${!var}") "
done
COMMAND_LINE+="bench/run.sh${*:+ $(printf '%q ' "$@")}"
COMMAND_LINE=${COMMAND_LINE% }

# --- Scenarios -----------------------------------------------------------------------------------
# A scenario NAME is a function `scenario_NAME TARGET PORT MODE` (MODE: warmup or run) that prints
# "VALUE QUERIES" on its last line of stdout; its metadata sits in the arrays below. UNIT is qps
# (higher is better) or s (lower is better). GOAL, optional: "A/B <= X" or "A/B >= X" on medians.
SCENARIOS=(point_select_8 slap_c1 rules_point_select_8 multiplex_2000 connect_trx_8 idle_10000
    cache_slap_c8 cache_point_select_8 cache_point_select_8_ps)
# ONLY[s]: the targets a scenario runs on (default: all). GOAL may also be "TARGET <= X" (an
# absolute value). A scenario may append "- ..." note lines to $WORK/notes.
declare -A DESC UNIT GOAL NEEDS ONLY
DESC[point_select_8]="sysbench oltp_point_select, text protocol (--db-ps-mode=disable), 8 threads, ${BENCH_TIME} s per run, 1 table of ${TABLE_SIZE} rows"
UNIT[point_select_8]=qps
GOAL[point_select_8]="weir/haproxy >= 0.8"
NEEDS[point_select_8]=sysbench_tables
DESC[rules_point_select_8]="sysbench oltp_point_select, text protocol, 8 threads, ${BENCH_TIME} s per run: weir with 1000 non-matching rules (target weirr1000) against weir with none; run with BENCH_TARGETS=\"direct weir weirr1000\""
UNIT[rules_point_select_8]=qps
GOAL[rules_point_select_8]="weirr1000/weir >= 0.9"
NEEDS[rules_point_select_8]=sysbench_tables
DESC[slap_c1]="mysqlslap --query=\"SELECT 1111\" --concurrency=1 --number-of-queries=${SLAP_QUERIES} --iterations=1 (seconds per run)"
UNIT[slap_c1]=s
GOAL[slap_c1]="weir/direct <= 1.5"

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

scenario_point_select_8() {
    local secs=$BENCH_TIME
    [ "$3" = warmup ] && secs=$WARMUP
    run_sysbench oltp_point_select 8 "$2" "$secs" --db-ps-mode=disable
}

scenario_rules_point_select_8() { scenario_point_select_8 "$@"; }
scenario_cache_point_select_8() { scenario_point_select_8 "$@"; }

scenario_cache_point_select_8_ps() {
    local secs=$BENCH_TIME
    [ "$3" = warmup ] && secs=$WARMUP
    run_sysbench oltp_point_select 8 "$2" "$secs" --db-ps-mode=auto
}

# sample_backend_conns PID FILE: every 0.1 s while PID lives, its TCP connections to the primary.
sample_backend_conns() {
    : >"$2"
    while kill -0 "$1" 2>/dev/null; do
        ss -Htnp state established "( dport = :$PRIMARY_PORT )" 2>/dev/null |
            grep -c "pid=$1," >>"$2" || true
        sleep 0.1
    done
}

scenario_multiplex_2000() {
    local t=$1 port=$2 secs=$BENCH_TIME pid=${PID[$1]:-} sampler out peak max
    [ "$3" = warmup ] && secs=$WARMUP
    sample_backend_conns "$pid" "$WORK/conns-$t" &
    sampler=$!
    out=$(run_sysbench oltp_point_select 2000 "$port" "$secs" --db-ps-mode=disable) || {
        kill "$sampler" 2>/dev/null
        return 1
    }
    kill "$sampler" 2>/dev/null
    wait "$sampler" 2>/dev/null || true
    peak=$(sort -n "$WORK/conns-$t" | tail -n 1)
    [ "$3" = warmup ] || echo "- multiplex_2000: $t had at most ${peak:-?} connections open to the primary" >>"$WORK/notes"
    max=${t#weirm}
    if [[ $t == weirm* ]] && [ "${peak:-0}" -gt "$max" ]; then
        echo "$t had $peak connections to the primary, over its max_connections $max" >&2
        return 1
    fi
    printf '%s\n' "$out"
}

scenario_connect_trx_8() {
    local secs=$BENCH_TIME
    [ "$3" = warmup ] && secs=$WARMUP
    run_sysbench "$WEIR_ROOT/bench/connect_per_trx.lua" 8 "$2" "$secs"
}

rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }

scenario_idle_10000() {
    local t=$1 port=$2 n=${BENCH_IDLE_CLIENTS:-10000} pid=${PID[$1]:-} before after py hold i=0
    [ "$3" = warmup ] && n=$((n / 10))
    [ -n "$pid" ] || return 1
    # mysql-max_connections (default 2048) would refuse most of them.
    mariadb --protocol=tcp -h127.0.0.1 -P"${ADMIN[$t]}" -uadmin -padmin -e \
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
    [ "$3" = warmup ] || echo "- idle_10000: $t VmRSS $before KiB before, $after KiB with $n idle clients" >>"$WORK/notes"
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

scenario_slap_c1() {
    local n=$SLAP_QUERIES
    [ "$3" = warmup ] && n=$((SLAP_QUERIES / 10))
    run_slap "$2" 1 "$n"
}

scenario_cache_slap_c8() {
    local n=$((SLAP_QUERIES * 4))
    [ "$3" = warmup ] && n=$((n / 10))
    run_slap "$2" 8 "$n"
}

prepare_sysbench_tables() {
    local args
    mapfile -t args < <(sysbench_args "$PRIMARY_PORT")
    say "preparing the sysbench table directly on the primary (${TABLE_SIZE} rows)"
    sysbench oltp_point_select "${args[@]}" cleanup >/dev/null
    sysbench oltp_point_select "${args[@]}" prepare >/dev/null
}

# --- Targets -------------------------------------------------------------------------------------
# A target has a port (target_port) and, for a proxy, a process whose CPU time is measured.
declare -A PORT PID ADMIN
WEIR_PID=
WEIR_PIDS=()
HAPROXY_PID=
TOPOLOGY_PID=

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
    local i=0
    until mariadb --protocol=tcp -h127.0.0.1 -P"$HAPROXY_PORT" -u"$WEIR_USER" -p"$WEIR_PASS" \
        -Nse 'SELECT 1' >/dev/null 2>&1; do
        kill -0 "$HAPROXY_PID" 2>/dev/null || die "haproxy exited: $(tail -n 5 "$WORK/haproxy.log")"
        [ $i -lt 100 ] || die "haproxy does not answer on port $HAPROXY_PORT"
        sleep 0.1
        i=$((i + 1))
    done
}

start_targets() {
    local t
    for t in "${TARGETS[@]}"; do
        case $t in
        direct) PORT[direct]=$PRIMARY_PORT ;;
        haproxy)
            require_free_port "$HAPROXY_PORT" haproxy BENCH_HAPROXY_PORT
            start_haproxy
            PORT[haproxy]=$HAPROXY_PORT PID[haproxy]=$HAPROXY_PID
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
        *) die "unknown target $t (known: direct haproxy weir weirN weirrN weirmN weirs weirc weircN)" ;;
        esac
    done
}

# start_weir_with_primary NAME ASSIGNMENTS: a weir target whose primary row (hostgroup 0) gets
# ASSIGNMENTS through the admin interface.
start_weir_with_primary() {
    local admin_port
    admin_port=$(free_port)
    start_weir_target "$1" "$(free_port)" "$admin_port" "$WEIR_THREADS"
    mariadb --protocol=tcp -h127.0.0.1 -P"$admin_port" -uadmin -padmin -e \
        "UPDATE mysql_servers SET $2 WHERE hostgroup_id = 0; LOAD MYSQL SERVERS TO RUNTIME" ||
        die "could not set $2 on the primary of $1"
}

# start_weir_target NAME PORT ADMIN_PORT THREADS
start_weir_target() {
    write_weir_config "$WORK/$1.toml" "$2" "$3" "$4"
    start_weir "$WORK/$1.toml" "$WORK/$1-data" "$WORK/$1.log" "$2"
    WEIR_PIDS+=("$WEIR_PID")
    PORT[$1]=$2 PID[$1]=$WEIR_PID ADMIN[$1]=$3
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
    printf '%s\n' "$sql" | mariadb --protocol=tcp -h127.0.0.1 -P"$port" -uadmin -padmin ||
        die "could not load $n rules into weir (admin port $port)"
    say "loaded $n rules: $(mariadb --protocol=tcp -h127.0.0.1 -P"$port" -uadmin -padmin -Nse \
        'SELECT COUNT(*) FROM runtime_mysql_query_rules') in runtime_mysql_query_rules"
}

# load_cache_rules ADMIN_PORT: cache seed 000's `SELECT 1111` and sysbench's point select (text
# and prepared) for 60 s.
load_cache_rules() {
    mariadb --protocol=tcp -h127.0.0.1 -P"$1" -uadmin -padmin -e "
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

# --- Cleanup -------------------------------------------------------------------------------------
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    local pid
    for pid in "${WEIR_PIDS[@]}"; do stop_pid "$pid" weir 30; done
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

# --- Main ----------------------------------------------------------------------------------------
if [ "${1:-}" = --list ]; then
    for s in "${SCENARIOS[@]}"; do printf '%-16s %s\n' "$s" "${DESC[$s]}"; done
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

ensure_packages mariadbd:mariadb-server mariadb-install-db:mariadb-server mariadb:mariadb-client \
    mysqlslap:mariadb-client sysbench:sysbench haproxy:haproxy
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
    declare -A VALUES=() CPU=() QUERIES=() PCPU=()
    for t in "${TARGETS[@]}"; do
        runs_on "$s" "$t" || continue
        "scenario_$s" "$t" "${PORT[$t]}" warmup >/dev/null ||
            warn "$s: warm-up through $t failed"
        VALUES[$t]="" CPU[$t]=0 QUERIES[$t]=0 PCPU[$t]=0
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
            if result=$("scenario_$s" "$t" "${PORT[$t]}" run 2>"$WORK/err"); then
                read -r value queries <<<"$(tail -n 1 <<<"$result")"
                VALUES[$t]+="$value "
                QUERIES[$t]=$((QUERIES[$t] + queries))
                if [ -n "$pid" ]; then CPU[$t]=$((CPU[$t] + $(cpu_ticks "$pid") - before)); fi
                [ -z "$PRIMARY_PID" ] || PCPU[$t]=$((PCPU[$t] + $(cpu_ticks "$PRIMARY_PID") - pbefore))
                printf '  round %d  %-8s %s\n' "$round" "$t" "$(fmt_value "$value" "${UNIT[$s]}")"
            else
                FAILURES+=("$s round $round: $t failed: $(tail -n 3 "$WORK/err" | tr '\n' ' ')")
                printf '  round %d  %-8s FAILED\n' "$round" "$t"
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
    for t in "${TARGETS[@]}"; do [[ $t != weir* ]] || pairs+=("$t/haproxy"); done
    for pair in "${pairs[@]}"; do
        a=${pair%/*} b=${pair#*/}
        if [ -n "${MED[$a]:-}" ] && [ -n "${MED[$b]:-}" ]; then
            ratios+="$pair $(ratio "${MED[$a]}" "${MED[$b]}"), "
        fi
    done
    goal=${GOAL[$s]:-}
    verdict="-"
    if [ -n "$goal" ]; then
        read -r pair op limit <<<"$goal"
        a=${pair%/*} b=${pair#*/}
        if [[ $pair != */* ]] && [ -n "${MED[$a]:-}" ]; then
            r=${MED[$a]}
            b=$a
        elif [ -n "${MED[$a]:-}" ] && [ -n "${MED[$b]:-}" ]; then
            r=$(ratio "${MED[$a]}" "${MED[$b]}")
        fi
        if [ -n "${MED[$a]:-}" ] && [ -n "${MED[$b]:-}" ]; then
            if awk -v r="$r" -v l="$limit" -v op="$op" 'BEGIN { exit !(op == ">=" ? r >= l : r <= l) }'; then
                verdict="$goal: met ($r)"
            else
                verdict="$goal: NOT met ($r)"
            fi
        else
            verdict="$goal: no data"
        fi
    fi
    row+=" ${ratios%, } | $verdict |"
    TABLE+="$row"$'\n'
    ticks_per_s=$(getconf CLK_TCK)
    for t in "${TARGETS[@]}"; do
        if [ -n "$PRIMARY_PID" ] && [ "${QUERIES[$t]:-0}" -gt 0 ]; then
            NOTES+="- $s: primary mariadbd CPU time under $t $(awk -v c="${PCPU[$t]}" -v hz="$ticks_per_s" -v q="${QUERIES[$t]}" \
                'BEGIN { printf "%.2f µs/query", c / hz / q * 1e6 }')"$'\n'
        fi
        if [ -z "${PID[$t]:-}" ] || [ "${QUERIES[$t]:-0}" -eq 0 ]; then continue; fi
        NOTES+="- $s: $t CPU time $(awk -v c="${CPU[$t]}" -v hz="$ticks_per_s" -v q="${QUERIES[$t]}" \
            'BEGIN { printf "%.2f µs/query (%.2f s over %d queries)", c / hz / q * 1e6, c / hz, q }')"$'\n'
    done
    for t in "${TARGETS[@]}"; do
        runs_on "$s" "$t" || continue
        NOTES+="- $s: $t runs: ${VALUES[$t]:-none}"$'\n'
    done
done

for t in "${!WEIR_THREADS_OF[@]}"; do
    log=$WORK/$t.log pid=${PID[$t]}
    problems=$(grep -cE ' (WARN|ERROR) ' "$log" || true)
    NOTES+="- $t (threads = ${WEIR_THREADS_OF[$t]}) log: $problems WARN/ERROR lines"
    if [ "$problems" -gt 0 ]; then
        NOTES+=", the last ones: $(grep -E ' (WARN|ERROR) ' "$log" | tail -n 3 | tr '\n' ' ')"
    fi
    NOTES+=$'\n'
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
