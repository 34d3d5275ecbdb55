# A private Redis server for the remote-cache tests, sourced by them (bash): started in a temporary
# folder on a free loopback port (never 6379) and a unix socket, persisting nothing, and stopped when
# the test exits, also when it fails. Tests skip (exit 77) where redis-server is not installed.
#
#   redis_start DIR [PORT]   starts it (again, after redis_kill, on the same port); sets REDIS_PORT,
#                            REDIS_SOCK, REDIS_URL (redis://127.0.0.1:PORT), REDIS_PID
#   redis_kill               kill -9, as a crash would
#   rcli ARGS...             redis-cli against it
#   redis_stop               stops it (the EXIT trap calls it)

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
    REDIS_SOCK="$dir/redis.sock"
    mkdir -p "$dir"
    # a child of this shell (not a daemon), so that `wait` reaps it when it is killed
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no \
        --unixsocket "$REDIS_SOCK" --unixsocketperm 700 --maxmemory-policy allkeys-lru --enable-debug-command local \
        --logfile "$dir/redis.log" >/dev/null 2>&1 &
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
    # it keeps nothing: no need to wait for a clean shutdown (which takes Redis up to a second)
    redis_kill
}
