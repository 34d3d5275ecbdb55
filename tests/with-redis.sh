#!/usr/bin/env bash
# Runs a test program with a private Redis server (tests/redis-lib.sh): KJ_TEST_REDIS_URL and
# KJ_TEST_REDIS_PORT name it; it is stopped afterwards, whatever the program did.
# Usage: with-redis.sh PROGRAM [ARGS...]
set -u
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/redis-lib.sh"
redis_require
work="$(mktemp -d)"
trap 'redis_stop; rm -rf "$work"' EXIT
trap 'exit 1' TERM INT
redis_start "$work/redis" || { echo "FAIL: redis-server did not start"; cat "$work/redis/redis.log"; exit 1; }
KJ_TEST_REDIS_URL="$REDIS_URL" KJ_TEST_REDIS_PORT="$REDIS_PORT" "$@"
