#!/usr/bin/env bash
# Cache faults end to end (docs/bad-input.md, "Cache faults"; each block is marked with its row):
# a damaged or linked entry, and a cache folder that cannot be created, is read-only or full. In each
# case the kernel still compiles and, on the stub driver's device, runs, with a warning; no partial or
# wrong entry and no temporary file is left. Read-only and full folders are simulated with the
# LD_PRELOAD shim tests/fault-inject.c (the tests run as root, which ignores permission bits).
# Usage: test-cache-faults.sh path/to/kernjit path/to/libkj-fault-inject.so path/to/libstub-cuda.so kernels/
set -u
K="$1"
SHIM="$2"
STUB="$3"
KD="$4"
work="$(cd "$(mktemp -d)" && pwd -P)"
stage=""
trap 'rm -rf "$work" ${stage:+"$stage"}' EXIT
cd "$work"
failures=0
export KERNJIT_PATH=
export KERNJIT_LIBCUDA="$STUB"
unset KERNJIT_SEED_PATH KERNJIT_SEED_SECRET KERNJIT_REMOTE_SECRET
# the shim is preloaded ahead of a sanitizer runtime in -Db_sanitize builds
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

# run ROW CODE OUTPUT-NEEDLE STDERR-NEEDLE command...: the exit code, a line of the output and a
# warning (empty: none expected)
run() {
    local row="$1" code="$2" needle="$3" warning="$4"
    shift 4
    local rc
    "$@" >"$work/out" 2>"$work/err"
    rc=$?
    if [ "$rc" != "$code" ]; then
        fail "$row: '$*' exited $rc, expected $code"; sed 's/^/    /' "$work/out" "$work/err"
    elif [ -n "$needle" ] && ! grep -qF -- "$needle" "$work/out"; then
        fail "$row: the output of '$*' lacks '$needle'"; sed 's/^/    /' "$work/out" "$work/err"
    elif [ -n "$warning" ] && ! grep -qF -- "$warning" "$work/err"; then
        fail "$row: '$*' did not warn '$warning'"; sed 's/^/    /' "$work/err"
    elif [ -z "$warning" ] && grep -q "warning" "$work/err"; then
        fail "$row: '$*' warned unexpectedly"; sed 's/^/    /' "$work/err"
    else
        ok "$row: $*"
    fi
}

# The folder holds only whole, valid entries: no temporary file, every entry verifies, and (when
# given) exactly N entries.
clean() {
    local row="$1" dir="$2" want="${3:-}"
    local tmps entries bad
    tmps=$(find "$dir" -name '.tmp-*' 2>/dev/null | wc -l)
    entries=$(find "$dir" -name '*.cubin' -type f 2>/dev/null | wc -l)
    bad=$(KERNJIT_CACHE_DIR="$dir" "$K" cache list --json 2>/dev/null | grep -o '"valid":false' | wc -l)
    if [ "$tmps" != 0 ]; then fail "$row: $tmps temporary file(s) left in $dir"
    elif [ "$bad" != 0 ]; then fail "$row: $bad damaged entr(ies) left in $dir"
    elif [ -n "$want" ] && [ "$entries" != "$want" ]; then fail "$row: $entries entries in $dir, expected $want"
    else ok "$row: $dir holds $entries valid entr(ies), no temporary file"; fi
}

sum() { sha256sum "$1" | cut -c1-64; }

# Rows that run kernjit as another user (nobody, through setpriv), which cannot read a private build
# tree (a home folder is often 0700, root's always): the program, its library and the stub driver
# are staged in a folder that user can reach, and tried there first. as_nobody_ready sets AS_NOBODY
# (the command prefix, the stub driver its device); else it says why (why_not_nobody).
as_nobody_ready() {
    [ -n "$stage" ] && return 0
    if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
        why_not_nobody="needs root and setpriv"; return 1
    fi
    stage=$(mktemp -d /tmp/kernjit-nobody-XXXXXX) && chmod 755 "$stage" || { why_not_nobody="no staging folder"; return 1; }
    cp "$K" "$stage/kernjit" && cp "$STUB" "$stage/libstub-cuda.so"
    local lib
    lib=$(ldd "$K" | awk '$1 ~ /^libkernjit\.so/ && $3 ~ /^\// {print $1, $3}')
    # shellcheck disable=SC2086
    [ -z "$lib" ] || cp -L $(cut -d' ' -f2 <<<"$lib") "$stage/$(cut -d' ' -f1 <<<"$lib")"
    chmod -R a+rX "$stage"
    AS_NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups env "LD_LIBRARY_PATH=$stage${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
               "KERNJIT_LIBCUDA=$stage/libstub-cuda.so" "$stage/kernjit")
    local out
    if ! out=$(cd / && "${AS_NOBODY[@]}" --version 2>&1); then
        why_not_nobody="kernjit does not start as user 65534 from $stage: $out"; return 1
    fi
}

# vadd on the stub device: c = a + b, checked through --print
LAUNCH=("$K" launch "$KD/vadd.cu" --grid 4 --block 256 --arg 'f32[1000]=iota' --arg 'f32[1000]=2' --arg 'f32[1000]=zeros'
        --arg i32=1000 --print 2:999 --repeat 0)
RAN="[999] 1001"

# A cache with one good entry for vadd; prints its path.
fresh() {
    local dir="$1"
    rm -rf "$dir"
    KERNJIT_CACHE_DIR="$dir" "${LAUNCH[@]}" >/dev/null 2>&1 || fail "setting up $dir"
    find "$dir" -name '*.cubin' -type f
}

# ---- damaged entries -------------------------------------------------------------------------------
damaged() {
    local row="$1" what="$2"
    shift 2
    local c="$work/$row" e size
    e=$(fresh "$c")
    size=$(stat -c %s "$e")
    "$@" "$e"
    KERNJIT_CACHE_DIR="$c" run "$row" 0 "$RAN" "is damaged or not ours; removed it" "${LAUNCH[@]}"
    grep -qF "compiled now" "$work/out" || grep -qF "compiled" "$work/out" || fail "$row: $what: not compiled again"
    [ "$(stat -c %s "$e" 2>/dev/null)" = "$size" ] && ok "$row: $what: replaced by a whole entry" \
        || fail "$row: $what: the entry was not replaced"
    clean "$row" "$c" 1
}
truncate100() { truncate -s 100 "$1"; }
truncate0() { truncate -s 0 "$1"; }
flip_last() { local n; n=$(stat -c %s "$1"); printf '\x55' | dd of="$1" bs=1 seek=$((n - 1)) conv=notrunc status=none; }
flip_version() { printf '\x02' | dd of="$1" bs=1 seek=8 conv=notrunc status=none; }
damaged F1 "truncated to 100 bytes" truncate100          # row F1
damaged F2 "truncated to 0 bytes" truncate0              # row F2
damaged F3 "a payload bit flipped" flip_last             # row F3
damaged F4 "a header byte changed" flip_version          # row F4

# ---- symbolic links ----------------------------------------------------------------------------------
# row F5: the entry is a link to a valid entry elsewhere: never followed (its target is not read as
# the entry, not written through, not removed); the link is replaced by a regular file
c="$work/F5"
e=$(fresh "$c")
cp "$e" "$work/target.cubin"
before=$(sum "$work/target.cubin")
rm "$e" && ln -s "$work/target.cubin" "$e"
KERNJIT_CACHE_DIR="$c" run F5 0 "$RAN" "is a symbolic link; removed it" "${LAUNCH[@]}"
[ "$(sum "$work/target.cubin")" = "$before" ] && ok "F5: the link's target is unchanged" || fail "F5: the link's target changed"
[ -f "$e" ] && [ ! -L "$e" ] && ok "F5: the entry is a regular file again" || fail "F5: the entry is still a link"
clean F5 "$c" 1
# row F6: a dangling link, and a link to a file the store would overwrite if it followed links
c="$work/F6"
e=$(fresh "$c")
rm "$e" && ln -s "$work/nowhere.cubin" "$e"
KERNJIT_CACHE_DIR="$c" run F6 0 "$RAN" "is a symbolic link; removed it" "${LAUNCH[@]}"
[ ! -e "$work/nowhere.cubin" ] && ok "F6: nothing was created at the link's target" || fail "F6: written through the link"
echo "precious" > "$work/precious"
rm "$e" && ln -s "$work/precious" "$e"
KERNJIT_CACHE_DIR="$c" run F6 0 "compiled" "is a symbolic link" "$K" compile "$KD/vadd.cu" --arch sm_90
[ "$(cat "$work/precious")" = precious ] && ok "F6: the file the link named is untouched" || fail "F6: the link was followed"
clean F6 "$c" 1
# row F7: the arch folder is a link to another folder: not used, nothing written there
c="$work/F7"
mkdir -p "$c" "$work/elsewhere" && chmod 700 "$c" "$work/elsewhere" && ln -s "$work/elsewhere" "$c/sm_90"
KERNJIT_CACHE_DIR="$c" run F7 0 "$RAN" "a symbolic link or not a folder" "${LAUNCH[@]}"
[ -z "$(ls -A "$work/elsewhere")" ] && ok "F7: nothing written through the linked folder" || fail "F7: wrote into the link's target"

# ---- folders that cannot be created or written -------------------------------------------------------
# row F8: a file is in the way of the cache folder
echo x > "$work/file"
KERNJIT_CACHE_DIR="$work/file/cache" run F8 0 "$RAN" "cannot create the cache folder" "${LAUNCH[@]}"
KERNJIT_CACHE_DIR="$work/file/cache" run F8 0 "(not stored: compiled in memory only)" "cannot create the cache folder" \
    "$K" compile "$KD/vadd.cu" --arch sm_90
[ "$(cat "$work/file")" = x ] && ok "F8: the file in the way is untouched" || fail "F8: the file in the way changed"

# row F9: creating the folder is forbidden (EACCES)
c="$work/F9/cache"
KJ_FAULT_DIR="$work/F9" KJ_FAULT=mkdir=EACCES LD_PRELOAD="$SHIM" KERNJIT_CACHE_DIR="$c" \
    run F9 0 "$RAN" "cannot create the cache folder $c (Permission denied)" "${LAUNCH[@]}"
[ ! -e "$work/F9" ] && ok "F9: nothing created" || fail "F9: $(find "$work/F9")"

# row F23: a folder deep in the path cannot be made (EACCES) after two above it were: those two are
# removed again, nothing is left
c="$work/F23/a/b/c/cache"
KJ_FAULT_DIR="$work/F23/a/b" KJ_FAULT=mkdir=EACCES LD_PRELOAD="$SHIM" KERNJIT_CACHE_DIR="$c" \
    run F23 0 "$RAN" "cannot create the cache folder $c (Permission denied)" "${LAUNCH[@]}"
[ ! -e "$work/F23" ] && ok "F23: the folders made on the way are gone" || fail "F23: left $(find "$work/F23")"

# row F10: a read-only file system, holding a good entry of another kernel: vadd compiles and runs,
# the other entry stays as it was and still hits
RO=create=EROFS,mkdir=EROFS,rename=EROFS,unlink=EROFS,utime=EROFS
c="$work/F10"
rm -rf "$c"
KERNJIT_CACHE_DIR="$c" "$K" compile "$KD/scale.cu:scale<float,256>" --arch sm_90 >/dev/null 2>&1 || fail "F10: setup"
other=$(find "$c" -name '*.cubin')
before=$(sum "$other")
KJ_FAULT_DIR="$c" KJ_FAULT=$RO LD_PRELOAD="$SHIM" KERNJIT_CACHE_DIR="$c" \
    run F10 0 "$RAN" "Read-only file system); the kernel is kept in memory only" "${LAUNCH[@]}"
KJ_FAULT_DIR="$c" KJ_FAULT=$RO LD_PRELOAD="$SHIM" KERNJIT_CACHE_DIR="$c" \
    run F10 0 "cache hit" "" "$K" compile "$KD/scale.cu:scale<float,256>" --arch sm_90
[ "$(sum "$other")" = "$before" ] && ok "F10: the other entry is unchanged" || fail "F10: the other entry changed"
clean F10 "$c" 1
# ... and a read-only root without the arch folder yet
c="$work/F10b"
mkdir -p "$c" && chmod 700 "$c"
KJ_FAULT_DIR="$c" KJ_FAULT=$RO LD_PRELOAD="$SHIM" KERNJIT_CACHE_DIR="$c" \
    run F10 0 "$RAN" "cannot create $c/sm_90 (Read-only file system)" "${LAUNCH[@]}"
[ -z "$(ls -A "$c")" ] && ok "F10: nothing created in the read-only folder" || fail "F10: $(ls -A "$c")"

# row F11: read-only, and the entry is damaged: it cannot be removed, so it stays as it was (every
# read finds it bad again); the kernel still compiles and runs, and the warning says so
c="$work/F11"
e=$(fresh "$c")
truncate -s 100 "$e"
before=$(sum "$e")
KJ_FAULT_DIR="$c" KJ_FAULT=$RO LD_PRELOAD="$SHIM" KERNJIT_CACHE_DIR="$c" \
    run F11 0 "$RAN" "is damaged or not ours; cannot remove it (Read-only file system)" "${LAUNCH[@]}"
[ "$(sum "$e")" = "$before" ] && ok "F11: the damaged entry is as it was" || fail "F11: the damaged entry changed"
[ -z "$(find "$c" -name '.tmp-*')" ] && ok "F11: no temporary file" || fail "F11: a temporary file was left"

# row F12: the disk fills while the entry is written (ENOSPC after 1000 bytes; and at once)
for bytes in 1000 0; do
    c="$work/F12-$bytes"
    rm -rf "$c"
    KJ_FAULT_DIR="$c" KJ_FAULT=write=ENOSPC KJ_FAULT_WRITE_BYTES=$bytes LD_PRELOAD="$SHIM" KERNJIT_CACHE_DIR="$c" \
        run F12 0 "$RAN" "No space left on device); the kernel is kept in memory only" "${LAUNCH[@]}"
    clean F12 "$c" 0
done
# row F13: over quota (EDQUOT), reported when the file is closed (as NFS and delayed allocation do)
c="$work/F13"
rm -rf "$c"
KJ_FAULT_DIR="$c" KJ_FAULT=close=EDQUOT LD_PRELOAD="$SHIM" KERNJIT_CACHE_DIR="$c" \
    run F13 0 "$RAN" "Disk quota exceeded); the kernel is kept in memory only" "${LAUNCH[@]}"
clean F13 "$c" 0
# row F14: the rename into place fails: the temporary file is removed
c="$work/F14"
rm -rf "$c"
KJ_FAULT_DIR="$c" KJ_FAULT=rename=EACCES LD_PRELOAD="$SHIM" KERNJIT_CACHE_DIR="$c" \
    run F14 0 "(not stored: compiled in memory only)" "Permission denied); the kernel is kept in memory only" \
    "$K" compile "$KD/vadd.cu" --arch sm_90
clean F14 "$c" 0
# the same cache, the fault gone: the next run stores the entry and the one after hits it
KERNJIT_CACHE_DIR="$c" run F14 0 "compiled" "" "$K" compile "$KD/vadd.cu" --arch sm_90
KERNJIT_CACHE_DIR="$c" run F14 0 "cache hit" "" "$K" compile "$KD/vadd.cu" --arch sm_90
clean F14 "$c" 1

# row F15: temporary files of a writer that crashed are removed once an hour old; a recent one (a
# writer at work) is left alone
c="$work/F15"
fresh "$c" >/dev/null
touch -d '2 hours ago' "$c/sm_90/.tmp-crashed"
touch "$c/sm_90/.tmp-busy"
KERNJIT_CACHE_DIR="$c" run F15 0 "compiled" "" "$K" compile "$KD/scale.cu:scale<float,256>" --arch sm_90
[ ! -e "$c/sm_90/.tmp-crashed" ] && [ -e "$c/sm_90/.tmp-busy" ] && ok "F15: the stale temporary file went, the recent one stayed" \
    || fail "F15: $(ls -A "$c/sm_90")"

# row F16: a FIFO where the entry belongs (a reader that blocked on it would hang the program): not
# read, removed, replaced by a whole entry
c="$work/F16"
e=$(fresh "$c")
rm "$e" && mkfifo "$e"
KERNJIT_CACHE_DIR="$c" run F16 0 "$RAN" "is damaged or not ours; removed it" timeout 60 "${LAUNCH[@]}"
[ -f "$e" ] && [ ! -p "$e" ] && ok "F16: the FIFO was replaced by an entry" || fail "F16: $(ls -l "$e")"
clean F16 "$c" 1

# A tuning database with two entries, as kernjit writes them (the device name: the stub's).
db_with_two() {
    mkdir -p -m 700 "$1"
    printf 'reduce\treduce_fast\tOP=sum T=f32\t20\tkernjit stub device\t9.0\t0.1.0\tBLOCK_SIZE=256 COARSE_FACTOR=8\t100.0\t1.000\t1048576\t1700000000\n' > "$1/tuning.db"
    printf 'reduce\treduce_fast\tOP=max T=f32\t20\tkernjit stub device\t9.0\t0.1.0\tBLOCK_SIZE=512 COARSE_FACTOR=4\t100.0\t1.000\t1048576\t1700000000\n' >> "$1/tuning.db"
}

# row F17: a tuning database that cannot be read (a link; over 16 MiB) is never replaced by an update:
# --forget fails and names why, and the file (or the link and its target) is unchanged
c="$work/F17"
mkdir -p -m 700 "$c"
db_with_two "$work/F17-target"
ln -s "$work/F17-target/tuning.db" "$c/tuning.db"
before=$(md5sum < "$work/F17-target/tuning.db")
KERNJIT_CACHE_DIR="$c" run F17 1 "" "it is a symbolic link" "$K" tune --forget
[ -L "$c/tuning.db" ] && [ "$(md5sum < "$work/F17-target/tuning.db")" = "$before" ] \
    && ok "F17: the linked database was left as it was" || fail "F17: the database changed: $(ls -l "$c")"
c="$work/F17b"
db_with_two "$c"
head -c $((17 << 20)) /dev/zero | tr '\0' '#' >> "$c/tuning.db"
before=$(md5sum < "$c/tuning.db")
KERNJIT_CACHE_DIR="$c" run F17 1 "" "bytes, more than the 16777216 a database may have" "$K" tune --forget
[ "$(md5sum < "$c/tuning.db")" = "$before" ] && ok "F17: the large database was left as it was" \
    || fail "F17: the large database changed"
# ... a FIFO (reading it would wait for a writer): refused at once, left as it is
c="$work/F17d"
mkdir -p -m 700 "$c" && mkfifo "$c/tuning.db"
KERNJIT_CACHE_DIR="$c" run F17 1 "" "(it is a special file, not a regular file): it is left as it is" \
    timeout 60 "$K" tune --forget
[ -p "$c/tuning.db" ] && ok "F17: the FIFO was left as it was" || fail "F17: $(ls -l "$c")"
# ... a read that fails part way (EIO): a part is not the database
c="$work/F17e"
db_with_two "$c"
before=$(md5sum < "$c/tuning.db")
KJ_FAULT_DIR="$c" KJ_FAULT=read=EIO LD_PRELOAD="$SHIM" KERNJIT_CACHE_DIR="$c" \
    run F17 1 "" "cannot be read (Input/output error): it is left as it is" "$K" tune --forget
[ "$(md5sum < "$c/tuning.db")" = "$before" ] && ok "F17: the database that failed a read was left as it was" \
    || fail "F17: the database that failed a read changed"
# ... and one this user may not read (EACCES): as nobody, the file root's
if as_nobody_ready; then
    c="$work/F17c"
    db_with_two "$c"
    chmod 600 "$c/tuning.db" && chown 65534 "$c" && chmod 711 "$work"
    before=$(md5sum < "$c/tuning.db")
    KERNJIT_CACHE_DIR="$c" run F17 1 "" "cannot be read (Permission denied): it is left as it is" \
        "${AS_NOBODY[@]}" tune --forget
    [ "$(md5sum < "$c/tuning.db")" = "$before" ] && ok "F17: the forbidden database was left as it was" \
        || fail "F17: the forbidden database changed"
else
    echo "skip: F17 EACCES ($why_not_nobody)"
fi

# row F18: a temporary file a killed writer left (its process id reused) blocks nothing: the update
# goes through and the leftover is removed
c="$work/F18"
db_with_two "$c"
for pid in 1 $$; do touch "$c/.tuning.db.tmp-$pid-0" "$c/.tuning.db.tmp-$pid-1"; done
KERNJIT_CACHE_DIR="$c" run F18 0 "removed 2" "" "$K" tune --forget
[ -z "$(ls -A "$c" | grep '^\.tuning\.db\.tmp-')" ] && ok "F18: the leftover temporary files are gone" \
    || fail "F18: $(ls -A "$c")"

# row F19: the cache folder is a symbolic link (planted in a shared folder): not used, nothing written
# through it, and `cache clear` removes nothing there
c="$work/F19"
mkdir -p -m 700 "$work/F19-elsewhere/sm_90"
echo "not a kernjit entry" > "$work/F19-elsewhere/sm_90/0123456789abcdef0123456789abcdef.cubin"
ln -s "$work/F19-elsewhere" "$c"
KERNJIT_CACHE_DIR="$c" run F19 0 "$RAN" "it is a symbolic link" "${LAUNCH[@]}"
KERNJIT_CACHE_DIR="$c" run F19 1 "" "it is a symbolic link" "$K" cache clear
[ "$(ls -A "$work/F19-elsewhere/sm_90")" = "0123456789abcdef0123456789abcdef.cubin" ] \
    && ok "F19: nothing was written or removed through the link" || fail "F19: $(ls -A "$work/F19-elsewhere/sm_90")"

# row F20: `cache clear` removes kernjit's entries only: a file named like one that is not one stays
c="$work/F20"
fresh "$c" >/dev/null
echo "someone else's file" > "$c/sm_90/fedcba9876543210fedcba9876543210.cubin"
KERNJIT_CACHE_DIR="$c" run F20 0 "removed 1 entry (" "" "$K" cache clear
[ -f "$c/sm_90/fedcba9876543210fedcba9876543210.cubin" ] && [ -z "$(find "$c" -name '*.cubin' ! -name 'fedcba*')" ] \
    && ok "F20: the entry went, the other file stayed" || fail "F20: $(ls -A "$c/sm_90")"

# row F21: the cache folder's parent may be written by anyone and has no sticky bit (anyone could swap
# the folder for a link): not used
c="$work/F21/cache"
mkdir -p "$work/F21" && chmod 777 "$work/F21"
KERNJIT_CACHE_DIR="$c" run F21 0 "$RAN" "may be written by anyone without the sticky bit" "${LAUNCH[@]}"
[ -z "$(find "$c" -name '*.cubin' 2>/dev/null)" ] && ok "F21: nothing stored" || fail "F21: an entry was stored"
chmod 1777 "$work/F21" && rm -rf "$c"
KERNJIT_CACHE_DIR="$c" run F21 0 "$RAN" "" "${LAUNCH[@]}"
[ -n "$(find "$c" -name '*.cubin')" ] && ok "F21: with the sticky bit, the cache is used" || fail "F21: nothing stored"

# row F22: `launch --save` onto a full disk: the previous file stays whole, no partial file is left
s="$work/F22"
mkdir -p "$s"
printf 'previous results' > "$s/out.bin"
KJ_FAULT_DIR="$s" KJ_FAULT=write=ENOSPC KJ_FAULT_WRITE_BYTES=100 LD_PRELOAD="$SHIM" KERNJIT_CACHE_DIR="$work/F22-cache" \
    run F22 1 "" "No space left on device (the file is as it was)" "${LAUNCH[@]}" --save "2=$s/out.bin"
[ "$(head -c 16 "$s/out.bin")" = "previous results" ] && [ "$(ls -A "$s")" = "out.bin" ] \
    && ok "F22: the previous file is whole, nothing else left" || fail "F22: $(ls -A "$s"): $(head -c 40 "$s/out.bin")"

# row F24: `launch --save` where a killed run left its temporary file, and process ids repeat (a
# container's process 1): the save goes through, and the previous file is replaced whole
s="$work/F24"
mkdir -p "$s"
printf 'previous results' > "$s/out.bin"
touch "$s/out.bin.tmp-1"
KJ_FAULT_PID=1 LD_PRELOAD="$SHIM" KERNJIT_CACHE_DIR="$work/F24-cache" run F24 0 "saved --arg 2 (4000 bytes)" "" \
    "${LAUNCH[@]}" --save "2=$s/out.bin"
[ "$(od -An -tf4 -j 3996 -N4 "$s/out.bin" | tr -d ' ')" = 1001 ] && [ "$(ls -A "$s")" = "$(printf 'out.bin\nout.bin.tmp-1')" ] \
    && ok "F24: saved, and nothing else left" || fail "F24: $(ls -A "$s")"

# row F25: `launch` as a user who may not read an @FILE input, or write the --save folder: a usage
# error before anything compiles or runs (nothing in the cache)
if as_nobody_ready; then
    s="$work/F25"
    mkdir -p "$s/cache" "$s/ro" && cp "$KD/vadd.cu" "$s/" && head -c 4000 /dev/zero > "$s/in.bin"
    chmod 600 "$s/in.bin" && chmod 755 "$s/ro" && chown 65534 "$s/cache" && chmod 700 "$s/cache" && chmod 711 "$work"
    LAUNCH_AS_NOBODY=("${AS_NOBODY[@]}" launch "$s/vadd.cu" --grid 4 --block 256)
    KERNJIT_CACHE_DIR="$s/cache" run F25 2 "" "cannot read '$s/in.bin': Permission denied" "${LAUNCH_AS_NOBODY[@]}" \
        --arg "f32[1000]=@$s/in.bin" --arg 'f32[1000]=2' --arg 'f32[1000]=zeros' --arg i32=1000
    KERNJIT_CACHE_DIR="$s/cache" run F25 2 "" "the folder '$s/ro' is not writable" "${LAUNCH_AS_NOBODY[@]}" \
        --arg 'f32[1000]=1' --arg 'f32[1000]=2' --arg 'f32[1000]=zeros' --arg i32=1000 --save "2=$s/ro/out.bin"
    [ -z "$(find "$s/cache" "$s/ro" -mindepth 1)" ] && ok "F25: nothing compiled, nothing written" || fail "F25: $(find "$s/cache" "$s/ro")"
else
    echo "skip: F25 ($why_not_nobody)"
fi

# ---- seed folders (kernjit seed): read only, verified as entries are, refused as cache folders are ----
# Each case: a seed of vadd for sm_90 (what the stub's device is); launched with KERNJIT_SEED_PATH
# naming it and an empty cache, the kernel comes from the seed when nothing is wrong, else it is
# compiled, with a warning, and the seed is left exactly as it was (a seed is never repaired).
seed() { # seed DIR: a fresh seed of vadd; prints its one entry's path
    rm -rf "$1"
    "$K" -q seed "$1" "$KD/vadd.cu" --arch sm_90 >/dev/null 2>&1 || fail "making the seed $1"
    find "$1" -name '*.cubin' -type f
}
seeded() { # seeded ROW SEEDS WARNING [ENV...]: the launch compiles (warning given) or hits the seed (none)
    local row="$1" seeds="$2" warning="$3" from
    shift 3
    from=$([ -n "$warning" ] && echo "compiled now" || echo "seed (built ahead of time)")
    rm -rf "$work/$row-cache"
    KERNJIT_SEED_PATH="$seeds" KERNJIT_CACHE_DIR="$work/$row-cache" run "$row" 0 "$from" "$warning" env "$@" "${LAUNCH[@]}"
    grep -qF "[999] 1001" "$work/out" || fail "$row: the kernel did not run"
}
unchanged() { # unchanged ROW DIR SNAPSHOT: the seed's files as they were
    [ "$(find "$2" -printf '%p %m %s\n' | sort | sha256sum)" = "$3" ] && ok "$1: the seed is as it was" \
        || fail "$1: the seed changed"
}
snapshot() { find "$1" -printf '%p %m %s\n' | sort | sha256sum; }

s="$work/F30"
e=$(seed "$s")
seeded F30 "$s" "" # the good seed serves
# row F30: a seed folder others may write to
chmod 777 "$s"
before=$(snapshot "$s")
seeded F30 "$s" "others may write to it (mode 0777)"
unchanged F30 "$s" "$before"
chmod 755 "$s"
# row F31: a seed folder of another user than this one or root
if [ "$(id -u)" = 0 ]; then
    chown 4242 "$s"
    seeded F31 "$s" "owned by uid 4242, not by this user (uid 0) or root"
    chown 0 "$s"
else
    echo "skip: F31 (needs root, to give the folder away)"
fi
# row F32: a seed folder that is a symbolic link
ln -s "$s" "$work/F32-link"
seeded F32 "$work/F32-link" "it is a symbolic link"
# row F33: a seed folder whose parent anyone may write, without the sticky bit
mkdir -p "$work/F33" && e33=$(seed "$work/F33/seed") && chmod 777 "$work/F33"
seeded F33 "$work/F33/seed" "may be written by anyone without the sticky bit"
# row F34: a listed seed folder that does not exist
seeded F34 "$work/F34-nowhere" "does not exist; not using it"
# row F35: a damaged seed entry: refused, compiled, and left as it is
e=$(seed "$s")
flip_last "$e"
before=$(snapshot "$s")
seeded F35 "$s" "is refused: it is damaged"
unchanged F35 "$s" "$before"
# row F36: an entry named for another key (a file copied in under another name)
e=$(seed "$s")
other=$(KERNJIT_SEED_PATH= KERNJIT_CACHE_DIR="$work/F36-other" "$K" compile "$KD/vadd.cu" --arch sm_90 -D UNUSED=1 --json |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["targets"][0]["key"])')
mv "$e" "$s/sm_90/$other.cubin"
KERNJIT_SEED_PATH="$s" KERNJIT_CACHE_DIR="$work/F36-cache" run F36 0 "compiled" "not the entry of its name's key" \
    "$K" compile "$KD/vadd.cu" --arch sm_90 -D UNUSED=1
# row F37: an entry of another format version
e=$(seed "$s")
flip_version "$e"
seeded F37 "$s" "it is an entry of format version 2, and this kernjit reads version 1"
# row F38: an unsigned entry where a secret is set
e=$(seed "$s")
seeded F38 "$s" "not signed, and this process requires signatures" KERNJIT_SEED_SECRET="the fault tests' seed secret"
# row F39: an entry signed with another secret (the remote cache's secret counts as the seed's)
rm -rf "$s" && KERNJIT_SEED_SECRET="one secret of the fault tests" "$K" -q seed "$s" "$KD/vadd.cu" --arch sm_90 >/dev/null 2>&1
seeded F39 "$s" "" KERNJIT_SEED_SECRET="one secret of the fault tests"
seeded F39 "$s" "signed with another secret, or changed after it was signed" KERNJIT_REMOTE_SECRET="another secret of the tests"
# row F40: an entry others may write to
e=$(seed "$s")
chmod 666 "$e"
seeded F40 "$s" "that only its owner may write"
# row F41: an entry that is a symbolic link (to a valid entry): never followed
e=$(seed "$s")
mv "$e" "$work/F41-target.cubin" && ln -s "$work/F41-target.cubin" "$e"
seeded F41 "$s" "a symbolic link, which is never followed"
[ -L "$e" ] && ok "F41: the link is left as it is" || fail "F41: the link was removed"

# row F26: the tuning database in the cache folder, where 0.2.0 kept it, cannot move to its own folder
# (~/.local/state/kernjit: a file is in the way; others may write to it): it stays, whole, and is used
# where it is
for how in file open; do
    h="$work/F26-$how"
    db_with_two "$h/.cache/kernjit"
    before=$(md5sum < "$h/.cache/kernjit/tuning.db")
    if [ $how = file ]; then
        mkdir -p "$h/.local" && echo "in the way" > "$h/.local/state"; warning="cannot create the tuning database's folder"
    else
        mkdir -p -m 777 "$h/.local/state/kernjit"; warning="others may write to it (mode 0777)"
    fi
    run F26 0 "2 entries in $h/.cache/kernjit/tuning.db" "$warning" env -u KERNJIT_CACHE_DIR HOME="$h" "$K" tune --show
    [ "$(md5sum < "$h/.cache/kernjit/tuning.db")" = "$before" ] && [ ! -e "$h/.local/state/kernjit/tuning.db" ] \
        && ok "F26 ($how): the database stayed whole in the cache folder" || fail "F26 ($how): $(find "$h")"
done

# row F27: the cache folder's tuning database cannot be read (a link): not moved, left as it is
h="$work/F27"
db_with_two "$work/F27-target"
mkdir -p -m 700 "$h/.cache/kernjit" && ln -s "$work/F27-target/tuning.db" "$h/.cache/kernjit/tuning.db"
before=$(md5sum < "$work/F27-target/tuning.db")
run F27 0 "0 entries in $h/.cache/kernjit/tuning.db" "it is a symbolic link" env -u KERNJIT_CACHE_DIR HOME="$h" "$K" tune --show
[ -L "$h/.cache/kernjit/tuning.db" ] && [ "$(md5sum < "$work/F27-target/tuning.db")" = "$before" ] \
    && [ ! -e "$h/.local/state/kernjit/tuning.db" ] && ok "F27: the link and its target were left as they were" \
    || fail "F27: $(find "$h" "$work/F27-target" -ls)"

[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all cache-fault checks passed"
