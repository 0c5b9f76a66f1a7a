#!/usr/bin/env bash
# Instructions per query in weir's own code (user space), counted by valgrind's callgrind:
# unlike timings, the count is the same run after run whatever else the machine does, so a
# change to the hot path can be measured before and after on a noisy 2-core VM.
#
#   bench/callgrind.sh LABEL=BINARY [LABEL=BINARY...]
#       e.g. bench/callgrind.sh before=/tmp/weir-old after=target/release/weir
#
# For each binary: weir (threads = 1, no rules) runs under callgrind in front of the primary of
# a testkit topology; after a warm-up, instrumentation counts 4,000 mysqlslap `SELECT 1111`
# (concurrency 4), then 4,000 sysbench oltp_point_select events (text protocol, 2 threads),
# then a mysqldump of 100,000 rows of 200 bytes (instructions per row), then, with a query
# rule caching the point select, 4,000 cache hits with prepared statements and 4,000 with the
# text protocol.
# The kernel's share (system calls, TCP) is not counted: see bench/run.sh for wall-clock
# figures. Appends a dated entry to bench/RESULTS.md (BENCH_NO_RECORD=1: not).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"

[ $# -gt 0 ] || die "usage: bench/callgrind.sh LABEL=BINARY [LABEL=BINARY...]"
for spec in "$@"; do
    [[ $spec == *=* ]] || die "$spec: expected LABEL=BINARY"
    [ -x "${spec#*=}" ] || die "${spec#*=} is not an executable"
done
ensure_packages valgrind:valgrind mariadb:mariadb-client mysqlslap:mariadb-client \
    sysbench:sysbench mariadbd:mariadb-server
QUERIES=4000
WORK=$(mktemp -d /tmp/weir-callgrind.XXXXXX)
TOPOLOGY_PID=
CG_PID=
cleanup() {
    local rc=$?
    [ -z "$CG_PID" ] || stop_pid "$CG_PID" callgrind 30
    [ -z "$TOPOLOGY_PID" ] || stop_pid "$TOPOLOGY_PID" weir-testkit 60
    [ "$rc" -ne 0 ] || rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
if [ -z "${TESTKIT_BIN:-}" ]; then
    build_release
fi
say "starting a topology (primary only)"
REPLICAS=0 start_topology "$WORK/topology" "$WORK/testkit.log"
SB=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-user="$WEIR_USER" --mysql-password="$WEIR_PASS"
    --mysql-db=sbtest --tables=1 --table-size=10000)
sysbench oltp_point_select "${SB[@]}" --mysql-port="$PRIMARY_PORT" prepare >/dev/null
DUMP_ROWS=100000
mariadb --protocol=tcp -h127.0.0.1 -P"$PRIMARY_PORT" -u"$WEIR_USER" -p"$WEIR_PASS" sbtest -e "
    CREATE OR REPLACE TABLE big (id INT NOT NULL PRIMARY KEY, pad CHAR(200) NOT NULL) DEFAULT CHARSET = latin1;
    INSERT INTO big SELECT seq, RPAD(CONCAT(seq, '-'), 200, 'x') FROM seq_1_to_$DUMP_ROWS"

# count LABEL BINARY: prints "LABEL SLAP_PER_QUERY SYSBENCH_PER_QUERY DUMP_PER_ROW".
count() {
    local label=$1 bin=$2 port admin out i
    port=$(free_port)
    admin=$(free_port)
    out=$WORK/$label.cg
    write_weir_config "$WORK/$label.toml" "$port" "$admin" 1
    start_bg "$WORK/$label.log" env NO_COLOR=1 valgrind --tool=callgrind --instr-atstart=no \
        --callgrind-out-file="$out" "$bin" -c "$WORK/$label.toml" -D "$WORK/$label-data"
    CG_PID=$BG_PID
    for ((i = 0; i < 300; i++)); do
        mariadb --protocol=tcp -h127.0.0.1 -P"$port" -u"$WEIR_USER" -p"$WEIR_PASS" \
            -Nse 'SELECT 1' >/dev/null 2>&1 && break
        kill -0 "$CG_PID" 2>/dev/null || die "weir under callgrind exited: $(tail -n 5 "$WORK/$label.log")"
        sleep 0.2
    done
    local slap=(--protocol=tcp --host=127.0.0.1 --port="$port" --user="$WEIR_USER"
        --password="$WEIR_PASS" --create-schema=sbtest --query="SELECT 1111" --iterations=1)
    mysqlslap "${slap[@]}" --concurrency=4 --number-of-queries=400 >/dev/null
    callgrind_control -i on "$CG_PID" >/dev/null
    mysqlslap "${slap[@]}" --concurrency=4 --number-of-queries="$QUERIES" >/dev/null
    callgrind_control -d slap "$CG_PID" >/dev/null
    callgrind_control -z "$CG_PID" >/dev/null
    sysbench oltp_point_select "${SB[@]}" --mysql-port="$port" --threads=2 --events="$QUERIES" \
        --time=0 --db-ps-mode=disable run >/dev/null
    callgrind_control -d sysbench "$CG_PID" >/dev/null
    callgrind_control -z "$CG_PID" >/dev/null
    mysqldump --protocol=tcp -h127.0.0.1 -P"$port" -u"$WEIR_USER" -p"$WEIR_PASS" \
        --single-transaction --skip-lock-tables sbtest big >/dev/null
    callgrind_control -d dump "$CG_PID" >/dev/null
    # Query cache hits: a rule caches the point select; 100 distinct ids, warmed up first, so
    # every counted execution is a hit.
    mariadb --protocol=tcp -h127.0.0.1 -P"$admin" -uadmin -padmin -e "
        INSERT INTO mysql_query_rules (rule_id, active, match_digest, cache_ttl, apply)
        VALUES (1, 1, '^SELECT c FROM sbtest', 3600000, 1); LOAD MYSQL QUERY RULES TO RUNTIME"
    local mode
    for mode in auto disable; do
        sysbench oltp_point_select "${SB[@]}" --table-size=100 --mysql-port="$port" --threads=2 \
            --events=2000 --time=0 --db-ps-mode="$mode" run >/dev/null
        callgrind_control -z "$CG_PID" >/dev/null
        sysbench oltp_point_select "${SB[@]}" --table-size=100 --mysql-port="$port" --threads=2 \
            --events="$QUERIES" --time=0 --db-ps-mode="$mode" run >/dev/null
        callgrind_control -d "cached-$mode" "$CG_PID" >/dev/null
    done
    stop_pid "$CG_PID" callgrind 30
    CG_PID=
    printf '%s' "$label"
    for f in "$out.1:$QUERIES" "$out.2:$QUERIES" "$out.3:$DUMP_ROWS" "$out.4:$QUERIES" "$out.5:$QUERIES"; do
        awk -v q="${f##*:}" -F': ' '/^(summary|totals):/ { printf " %d", $2 / q; exit }' "${f%:*}"
    done
    printf '\n'
}

ROWS=""
for spec in "$@"; do
    label=${spec%%=*}
    say "counting $label (${spec#*=})"
    read -r l slap sb dump cached_ps cached_text <<<"$(count "$label" "${spec#*=}")"
    ROWS+="| $l | \`${spec#*=}\` | $slap | $sb | $dump | $cached_ps | $cached_text |"$'\n'
done
TABLE="| label | binary | mysqlslap \`SELECT 1111\` (instructions/query) | sysbench point select (instructions/query) | mysqldump (instructions/row) | cached point select, prepared (instructions/query) | cached point select, text (instructions/query) |"$'\n'
TABLE+="|---|---|---|---|---|---|---|"$'\n'$ROWS
printf '\n%s' "$TABLE"
if [ "${BENCH_NO_RECORD:-0}" != 1 ]; then
    {
        # shellcheck disable=SC2016 # literal backquotes (markdown)
        printf '\n## %s — commit %s — callgrind (instructions in weir per query)\n\n' \
            "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(git -C "$WEIR_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
        # shellcheck disable=SC2016
        printf -- '- command: `bench/callgrind.sh %s`\n' "$*"
        # shellcheck disable=SC2016
        printf -- '- %s mysqlslap `SELECT 1111` at concurrency 4, then %s sysbench oltp_point_select events (text, 2 threads), then a mysqldump of '"$DUMP_ROWS"' rows of 200 bytes, through weir (threads = 1, no rules) under valgrind --tool=callgrind, after a warm-up; then, with a rule caching the point select, %s query cache hits with --db-ps-mode=auto and %s with the text protocol (100 distinct ids, warmed up); weir'"'"'s user-space instructions only (the kernel'"'"'s are not counted)\n\n' "$QUERIES" "$QUERIES" "$QUERIES" "$QUERIES"
        printf '%s' "$TABLE"
    } >>"$WEIR_ROOT/bench/RESULTS.md"
    say "appended to bench/RESULTS.md"
fi
