# shellcheck shell=bash
# Helpers shared by scripts/demo.sh, scripts/test.sh, bench/run.sh and .ci/run.
# Source it after `set -euo pipefail`; it defines functions and WEIR_ROOT, nothing else runs.

WEIR_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

say() {
    if [ -t 2 ]; then
        printf '\033[1m==> %s\033[0m\n' "$*" >&2
    else
        printf '==> %s\n' "$*" >&2
    fi
}
warn() { printf 'warning: %s\n' "$*" >&2; }
die() {
    printf 'error: %s\n' "$*" >&2
    exit 1
}

# Runs a command as root: directly when we are root, through sudo otherwise.
as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        die "root is needed to run '$*': run as root or install sudo"
    fi
}

# True when the program is on PATH or in an sbin directory (Debian puts mariadbd in /usr/sbin,
# which is often not on a normal user's PATH).
have_bin() {
    command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ] ||
        [ -x "/usr/local/sbin/$1" ]
}

# ensure_packages BIN:PACKAGE...: installs with apt-get the packages whose program is missing;
# does nothing (no apt-get update) when every program is present.
ensure_packages() {
    local spec bin pkg missing=()
    for spec in "$@"; do
        bin=${spec%%:*}
        pkg=${spec#*:}
        if ! have_bin "$bin" && [[ " ${missing[*]} " != *" $pkg "* ]]; then
            missing+=("$pkg")
        fi
    done
    if [ ${#missing[@]} -eq 0 ]; then
        return 0
    fi
    command -v apt-get >/dev/null 2>&1 ||
        die "missing packages: ${missing[*]} (no apt-get here: install them with your package manager)"
    say "installing ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
    for spec in "$@"; do
        have_bin "${spec%%:*}" || die "${spec%%:*} still missing after installing ${spec#*:}"
    done
}

# Makes sure cargo is on PATH (rustup installs it in ~/.cargo/bin); explains how to get it if not.
ensure_cargo() {
    if ! command -v cargo >/dev/null 2>&1 && [ -x "${CARGO_HOME:-$HOME/.cargo}/bin/cargo" ]; then
        PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
        export PATH
    fi
    if ! command -v cargo >/dev/null 2>&1; then
        cat >&2 <<'EOF'
error: cargo (the Rust toolchain, 1.87 or newer) is not installed. Install it with rustup:

    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y
    . "$HOME/.cargo/env"

then run this script again.
EOF
        exit 1
    fi
}

# Prints cargo's target directory (honours CARGO_TARGET_DIR and .cargo/config.toml).
cargo_target_dir() {
    local dir
    dir=$(cd "$WEIR_ROOT" && cargo metadata --format-version 1 --no-deps 2>/dev/null |
        grep -o '"target_directory":"[^"]*"' | head -n1 | cut -d'"' -f4) || true
    printf '%s\n' "${dir:-${CARGO_TARGET_DIR:-$WEIR_ROOT/target}}"
}

# Builds weir and weir-testkit in release mode; sets WEIR_BIN and TESTKIT_BIN unless they are
# already set (then nothing is built).
build_release() {
    if [ -n "${WEIR_BIN:-}" ] && [ -n "${TESTKIT_BIN:-}" ]; then
        [ -x "$WEIR_BIN" ] || die "WEIR_BIN=$WEIR_BIN is not executable"
        [ -x "$TESTKIT_BIN" ] || die "TESTKIT_BIN=$TESTKIT_BIN is not executable"
        return 0
    fi
    ensure_cargo
    say "building weir and weir-testkit (release)"
    (cd "$WEIR_ROOT" && cargo build --release -p weir-server -p weir-testkit) ||
        die "cargo build failed"
    local dir
    dir=$(cargo_target_dir)/release
    WEIR_BIN=${WEIR_BIN:-$dir/weir}
    TESTKIT_BIN=${TESTKIT_BIN:-$dir/weir-testkit}
}

# True when something accepts TCP connections on 127.0.0.1:PORT.
port_in_use() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Prints a TCP port on 127.0.0.1 that nothing listens on (picked at random in 20000-29999).
free_port() {
    local port i
    for ((i = 0; i < 200; i++)); do
        port=$((20000 + RANDOM % 10000))
        port_in_use "$port" || {
            echo "$port"
            return 0
        }
    done
    die "no free port found in 20000-29999"
}

# require_free_port PORT WHAT VAR: fails clearly when the port is taken.
require_free_port() {
    if port_in_use "$1"; then
        die "port $1 ($2) is already in use: stop what listens there or set $3 to another port"
    fi
}

# stop_pid PID NAME [SECONDS]: SIGTERM, wait up to SECONDS (default 30), then SIGKILL.
# Only for processes this script started.
stop_pid() {
    local pid=$1 name=$2 secs=${3:-30} i=0
    [ -n "$pid" ] || return 0
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null && [ $i -lt $((secs * 10)) ]; do
        sleep 0.1
        i=$((i + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
        warn "$name (pid $pid) did not stop within ${secs}s: killing it"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

# Starts a program in its own session (so a Ctrl-C in the terminal reaches only this script,
# which then stops things in order), in the background; sets BG_PID.
start_bg() {
    local log=$1
    shift
    if command -v setsid >/dev/null 2>&1; then
        setsid "$@" >"$log" 2>&1 </dev/null &
    else
        "$@" >"$log" 2>&1 </dev/null &
    fi
    BG_PID=$!
}

# start_topology DIR LOG: starts `weir-testkit topology --replicas 2` in DIR, waits until
# DIR/topology.env exists, loads it; sets TOPOLOGY_PID.
start_topology() {
    local dir=$1 log=$2 i=0
    mkdir -p "$dir"
    start_bg "$log" "$TESTKIT_BIN" topology --replicas "${REPLICAS:-2}" --dir "$dir"
    TOPOLOGY_PID=$BG_PID
    while [ ! -f "$dir/topology.env" ]; do
        if ! kill -0 "$TOPOLOGY_PID" 2>/dev/null; then
            tail -n 40 "$log" >&2 || true
            TOPOLOGY_PID=
            die "weir-testkit topology exited before the servers were ready (log: $log)"
        fi
        [ $i -lt 1800 ] || die "servers not ready after 180 s (log: $log)"
        sleep 0.1
        i=$((i + 1))
    done
    load_topology "$dir"
}

# load_topology DIR: reads DIR/topology.env (PRIMARY_PORT, REPLICA1_PORT, ..., WEIR_USER...).
load_topology() {
    [ -f "$1/topology.env" ] || die "$1/topology.env not found"
    # shellcheck disable=SC1091
    . "$1/topology.env"
    : "${PRIMARY_PORT:?topology.env has no PRIMARY_PORT}"
}

# write_weir_config FILE PORT ADMIN_PORT THREADS: weir in front of the loaded topology:
# hostgroup 0 = the primary, hostgroup 1 = the replicas, user weir with default_hostgroup 0.
write_weir_config() {
    local file=$1 port=$2 admin_port=$3 threads=$4 i var
    {
        cat <<EOF
# weir in front of a testkit topology: hostgroup 0 = primary (writer), 1 = replicas (readers).
[admin_variables]
mysql_ifaces = "127.0.0.1:$admin_port"

[mysql_variables]
threads = $threads
interfaces = "127.0.0.1:$port"
monitor_enabled = false

[[mysql_servers]]
address = "127.0.0.1"
port = $PRIMARY_PORT
hostgroup = 0
max_connections = 200
EOF
        for ((i = 1; i <= ${REPLICA_COUNT:-0}; i++)); do
            var=REPLICA${i}_PORT
            cat <<EOF

[[mysql_servers]]
address = "127.0.0.1"
port = ${!var}
hostgroup = 1
max_connections = 200
EOF
        done
        cat <<EOF

[[mysql_users]]
username = "${WEIR_USER:-weir}"
password = "${WEIR_PASS:-weirpass}"
default_hostgroup = 0

[[mysql_replication_hostgroups]]
writer_hostgroup = 0
reader_hostgroup = 1
comment = "primary and its replicas"
EOF
    } >"$file"
}

# start_weir CONFIG DATADIR LOG PORT: starts weir, waits until it answers a query; sets WEIR_PID.
start_weir() {
    local config=$1 datadir=$2 log=$3 port=$4 i=0
    mkdir -p "$datadir"
    # NO_COLOR: plain text in the log file (tracing colours its output by default).
    start_bg "$log" env NO_COLOR=1 "$WEIR_BIN" -c "$config" -D "$datadir"
    WEIR_PID=$BG_PID
    until mariadb --protocol=tcp -h127.0.0.1 -P"$port" -u"${WEIR_USER:-weir}" \
        -p"${WEIR_PASS:-weirpass}" --connect-timeout=2 -Nse 'SELECT 1' >/dev/null 2>&1; do
        if ! kill -0 "$WEIR_PID" 2>/dev/null; then
            tail -n 40 "$log" >&2 || true
            WEIR_PID=
            die "weir exited during startup (log: $log)"
        fi
        [ $i -lt 300 ] || die "weir does not answer on port $port after 30 s (log: $log)"
        sleep 0.1
        i=$((i + 1))
    done
}
