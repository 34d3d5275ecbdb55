# A private Redis server for the remote-cache tests, sourced by them (bash): started in a temporary
# folder on a free loopback port (never 6379) and a unix socket, persisting nothing, and stopped when
# the test exits, also when it fails. Tests skip (exit 77) where redis-server is not installed.
#
#   redis_start DIR [PORT [ARGS...]]  starts it (again, after redis_kill, on the same port; "" for a
#                            free one), with redis-server's ARGS too; sets REDIS_PORT, REDIS_SOCK,
#                            REDIS_URL (redis://127.0.0.1:PORT), REDIS_PID
#   redis_kill               kill -9, as a crash would
#   rcli ARGS...             redis-cli against it
#   redis_stop               stops it, and the fake server below (the EXIT trap calls it)

redis_require() {
    if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
        echo "SKIP: redis-server or redis-cli is not installed (scripts/setup --test installs them)"
        exit 77
    fi
}

redis_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

redis_start() {
    local dir="$1"
    REDIS_PORT="${2:-$(redis_free_port)}"
    shift $(($# < 2 ? $# : 2))
    REDIS_SOCK="$dir/redis.sock"
    mkdir -p "$dir"
    # a child of this shell (not a daemon), so that `wait` reaps it when it is killed
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no \
        --unixsocket "$REDIS_SOCK" --unixsocketperm 700 --maxmemory-policy allkeys-lru --enable-debug-command local \
        --logfile "$dir/redis.log" "$@" >/dev/null 2>&1 &
    REDIS_PID=$!
    for _ in $(seq 250); do
        redis-cli -p "$REDIS_PORT" PING 2>/dev/null | grep -q PONG && break
        kill -0 "$REDIS_PID" 2>/dev/null || return 1
        sleep 0.02
    done
    REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
    REDIS_DIR="$dir"
}

rcli() { redis-cli -p "$REDIS_PORT" "$@"; }

redis_kill() {
    if [ -n "${REDIS_PID:-}" ]; then
        kill -9 "$REDIS_PID" 2>/dev/null
        wait "$REDIS_PID" 2>/dev/null
    fi
    REDIS_PID=
}

redis_stop() {
    fake_stop
    # it keeps nothing: no need to wait for a clean shutdown (which takes Redis up to a second)
    redis_kill
}

# A hostile server (tests/fake-redis.py) beside the real one, one for the whole test:
#   fake_start DIR [CERT KEY]      starts it, answering as DIR says (over TLS with CERT and KEY); sets
#                                  FAKE_PORT, FAKE_URL (rediss:// over TLS), FAKE_PID
#   fake_answer CMD REPLY [HOW]    from now on CMD gets REPLY (raw RESP, C escapes: '*1\r\n:2\r\n'),
#                                  HOW: "trickle" (a byte every 100 ms), "flood" (zeros after it) or
#                                  "close" (the connection closed after it)
#   fake_reset                     every command its default answer again; the log of commands empty
#   fake_commands CMD              how many CMDs it received since the last fake_reset
#   fake_stop                      stops it (redis_stop calls it)
fake_start() {
    FAKE_DIR="$1"
    mkdir -p "$FAKE_DIR"
    rm -f "$FAKE_DIR/port"
    python3 "$(dirname "${BASH_SOURCE[0]}")/fake-redis.py" "$FAKE_DIR" "${@:2}" > "$FAKE_DIR/fake.log" 2>&1 &
    FAKE_PID=$!
    for _ in $(seq 500); do
        [ -s "$FAKE_DIR/port" ] && break
        kill -0 "$FAKE_PID" 2>/dev/null || { cat "$FAKE_DIR/fake.log"; return 1; }
        sleep 0.02
    done
    FAKE_PORT=$(cat "$FAKE_DIR/port")
    FAKE_URL="redis://127.0.0.1:$FAKE_PORT"
    [ $# = 1 ] || FAKE_URL="rediss://127.0.0.1:$FAKE_PORT"
}

fake_answer() {
    rm -f "$FAKE_DIR/$1".*
    printf '%s' "$2" > "$FAKE_DIR/$1.reply"
    [ -z "${3:-}" ] || touch "$FAKE_DIR/$1.$3"
}

fake_reset() {
    rm -f "$FAKE_DIR"/*.reply "$FAKE_DIR"/*.trickle "$FAKE_DIR"/*.flood "$FAKE_DIR"/*.close "$FAKE_DIR/commands"
}

fake_commands() { cat "$FAKE_DIR/commands" 2>/dev/null | grep -c -x "$1"; }

fake_stop() {
    if [ -n "${FAKE_PID:-}" ]; then
        kill "$FAKE_PID" 2>/dev/null
        wait "$FAKE_PID" 2>/dev/null
    fi
    FAKE_PID=
}
