/* kj_reduce_devices on the stub driver (tests/stub-cuda.c with KJ_STUB_DEVICES=4): the plumbing of a
 * reduction split across devices. The stub's reduce_fast "reduces" a part to its element count, so a
 * u32 or i64 result combines the counts each device was given: a sum is the total, max and min the
 * largest and smallest part, prod their product. The stub's trace (KJ_STUB_TRACE) shows what a call
 * asks of the driver: every launch before any wait, and the parts' events polled in turn. Real NVRTC
 * compiles; the gpu suite's
 * test-gpu-reduce-devices checks the arithmetic against the CPU reference. */
#include "test_util.h"

#define DEVICES 4

static int setup(void **state) { return kj_test_setup_stub_devices(state, DEVICES); }

typedef struct parts {
    kj_runtime *rts[DEVICES];
    kj_devptr parts[DEVICES];
} parts;

/* A runtime per device and a part of each, large enough for counts up to 4096 of 8 bytes. */
static void parts_open(parts *p, int same_device) {
    for (int d = 0; d < DEVICES; d++) {
        assert_non_null(p->rts[d] = kj_test_runtime(kj_test_dir, same_device ? 0 : d, NULL));
        KJ_ASSERT_OK(kj_mem_alloc(p->rts[d], 4096 * 8, &p->parts[d]));
    }
}

static void parts_close(parts *p) {
    for (int d = 0; d < DEVICES; d++) {
        kj_mem_free(p->rts[d], p->parts[d]);
        kj_runtime_destroy(p->rts[d]);
    }
}

static uint64_t reduce_counts(parts *p, const size_t *counts, kj_op op, kj_type type) {
    uint64_t got = 0;
    memset(&got, 0xA5, sizeof got);
    KJ_ASSERT_OK(kj_reduce_devices(p->rts, p->parts, counts, DEVICES, op, type, &got, NULL));
    return type == KJ_TYPE_U32 ? (uint32_t)got : got;
}

static void test_every_device_reduces_its_part(void **state) {
    (void)state;
    parts p;
    parts_open(&p, 0);
    const size_t counts[DEVICES] = {5, 3, 1000, 7};
    for (kj_type t = KJ_TYPE_U32; t <= KJ_TYPE_I64; t++) {
        if (t == KJ_TYPE_I32 || t == KJ_TYPE_F16) continue;
        assert_int_equal(reduce_counts(&p, counts, KJ_OP_SUM, t), 1015);
        assert_int_equal(reduce_counts(&p, counts, KJ_OP_MAX, t), 1000);
        assert_int_equal(reduce_counts(&p, counts, KJ_OP_MIN, t), 3);
        assert_int_equal(reduce_counts(&p, counts, KJ_OP_PROD, t), 105000);
    }
    /* an empty part is the identity: here the stub's 0 */
    const size_t with_empty[DEVICES] = {0, 4096, 1, 2};
    assert_int_equal(reduce_counts(&p, with_empty, KJ_OP_SUM, KJ_TYPE_U32), 4099);
    parts_close(&p);
}

/* Two runtimes on one device stand in for two devices (the gpu suite's way on a machine of one GPU);
 * one runtime may also take two parts on two streams of its own. */
static void test_runtimes_and_streams_share_a_device(void **state) {
    (void)state;
    parts p;
    parts_open(&p, 1);
    const size_t counts[DEVICES] = {10, 20, 30, 40};
    assert_int_equal(reduce_counts(&p, counts, KJ_OP_SUM, KJ_TYPE_I64), 100);

    kj_stream streams[2];
    for (int i = 0; i < 2; i++) KJ_ASSERT_OK(kj_stream_create(p.rts[0], &streams[i]));
    kj_runtime *twice[2] = {p.rts[0], p.rts[0]};
    kj_devptr halves[2] = {p.parts[0], p.parts[0] + 2048 * 8};
    const size_t two[2] = {11, 12};
    uint64_t got = 0;
    KJ_ASSERT_OK(kj_reduce_devices(twice, halves, two, 2, KJ_OP_MAX, KJ_TYPE_I64, &got, streams));
    assert_int_equal(got, 12);
    for (int i = 0; i < 2; i++) kj_stream_destroy(p.rts[0], streams[i]);
    parts_close(&p);
}

/* A part that fails is named with its index and device; the result is not written. */
static void test_failed_part_is_named(void **state) {
    (void)state;
    parts p;
    parts_open(&p, 0);
    const size_t counts[DEVICES] = {1, 1, 1, 1};
    kj_devptr misaligned[DEVICES] = {p.parts[0], p.parts[1], p.parts[2] + 2, p.parts[3]};
    uint64_t got = 0x1234;
    assert_int_equal(kj_reduce_devices(p.rts, misaligned, counts, DEVICES, KJ_OP_SUM, KJ_TYPE_I64, &got, NULL),
                     KJ_ERR_USAGE);
    assert_non_null(strstr(kj_last_error(), "kj_reduce_devices: part 2 (device 2): kj_reduce: input"));
    assert_non_null(strstr(kj_last_error(), "is not aligned to its 8-byte i64 elements"));
    assert_int_equal(got, 0x1234);
    parts_close(&p);
}

/* ---- what one call asks of the driver, and in which order (the stub's KJ_STUB_TRACE) ---- */

#define MAX_LINES 512
typedef struct trace {
    char lines[MAX_LINES][160];
    int count;
} trace;

/* One kj_reduce_devices of the four parts (sum u32 of 1 to 4 elements), traced, with each event
 * answering `pending` queries "not ready" first; its status. */
static kj_status traced_call(parts *p, int pending, uint32_t *got, trace *t) {
    const char *path = kj_test_path(kj_test_dir, "trace.txt");
    remove(path);
    char text[16];
    snprintf(text, sizeof text, "%d", pending);
    setenv("KJ_STUB_EVENT_PENDING", text, 1);
    setenv("KJ_STUB_TRACE", path, 1);
    const size_t counts[DEVICES] = {1, 2, 3, 4};
    kj_status s = kj_reduce_devices(p->rts, p->parts, counts, DEVICES, KJ_OP_SUM, KJ_TYPE_U32, got, NULL);
    unsetenv("KJ_STUB_TRACE");
    unsetenv("KJ_STUB_EVENT_PENDING");
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    for (t->count = 0; t->count < MAX_LINES && fgets(t->lines[t->count], sizeof t->lines[0], f); t->count++)
        t->lines[t->count][strcspn(t->lines[t->count], "\n")] = '\0';
    fclose(f);
    return s;
}

/* The index of the first (last: from the end) line that begins with `prefix`, -1 when none. */
static int find(const trace *t, const char *prefix, int last) {
    for (int k = 0; k < t->count; k++) {
        int i = last ? t->count - 1 - k : k;
        if (strncmp(t->lines[i], prefix, strlen(prefix)) == 0) return i;
    }
    return -1;
}

static int count_of(const trace *t, const char *prefix) {
    int n = 0;
    for (int i = 0; i < t->count; i++) n += strncmp(t->lines[i], prefix, strlen(prefix)) == 0;
    return n;
}

/* Every device's kernel goes out before anything is waited for; each device's context is made
 * current once; nothing is copied back or waited for one device at a time: the parts' events are
 * polled in turn (device 3's is asked before device 0's is done), with no context switch. */
static void test_launches_go_out_before_any_wait(void **state) {
    (void)state;
    parts p;
    parts_open(&p, 0);
    uint32_t got = 0;
    trace t;
    KJ_ASSERT_OK(traced_call(&p, 0, &got, &t)); /* kernels got, lanes made: what is left is the call itself */
    got = 0;
    KJ_ASSERT_OK(traced_call(&p, 2, &got, &t));
    assert_int_equal(got, 10);
    char line[64];
    for (int d = 0; d < DEVICES; d++) {
        snprintf(line, sizeof line, "launch %d ", d);
        assert_int_equal(count_of(&t, line), 1);
        snprintf(line, sizeof line, "cuCtxSetCurrent %d", d);
        assert_true(count_of(&t, line) <= 1);
        snprintf(line, sizeof line, "cuEventQuery %d not-ready", d);
        assert_int_equal(count_of(&t, line), 2);
        snprintf(line, sizeof line, "cuEventQuery %d done", d);
        assert_int_equal(count_of(&t, line), 1);
    }
    int last_launch = find(&t, "launch ", 1), first_query = find(&t, "cuEventQuery", 0);
    assert_true(last_launch >= 0 && first_query > last_launch);
    assert_true(find(&t, "cuCtxSetCurrent", 1) < first_query);
    assert_true(find(&t, "cuEventQuery 3", 0) < find(&t, "cuEventQuery 0 done", 0));
    const char *waits[] = {"cuStreamSynchronize", "cuStreamQuery", "cuEventSynchronize", "cuCtxSynchronize",
                           "cuMemcpyDtoH"};
    for (size_t i = 0; i < sizeof waits / sizeof waits[0]; i++)
        if (count_of(&t, waits[i])) fail_msg("%s in a kj_reduce_devices call", waits[i]);
    parts_close(&p);
}

/* A part whose work fails on its device (the stub's KJ_STUB_FAULT_DEVICE) is named with its index and
 * device; the other parts are still waited for until done; the result is not written; the runtimes
 * work on afterwards. */
static void test_failed_part_waits_for_the_others(void **state) {
    (void)state;
    parts p;
    parts_open(&p, 0);
    uint32_t got = 0x1234;
    trace t;
    setenv("KJ_STUB_FAULT_DEVICE", "1", 1);
    kj_status s = traced_call(&p, 3, &got, &t);
    unsetenv("KJ_STUB_FAULT_DEVICE");
    assert_int_equal(s, KJ_ERR_CUDA);
    assert_non_null(strstr(kj_last_error(), "kj_reduce_devices: part 1 (device 1): the part's reduction failed"));
    assert_non_null(strstr(kj_last_error(), "CUDA_ERROR_LAUNCH_FAILED"));
    assert_int_equal(got, 0x1234);
    assert_true(find(&t, "cuEventQuery 1 failed", 0) >= 0);
    for (int d = 0; d < DEVICES; d++) {
        if (d == 1) continue;
        char done[64];
        snprintf(done, sizeof done, "cuEventQuery %d done", d);
        assert_int_equal(count_of(&t, done), 1);
    }
    KJ_ASSERT_OK(traced_call(&p, 0, &got, &t));
    assert_int_equal(got, 10);
    parts_close(&p);
}

KJ_TEST_MAIN(setup, kj_test_teardown, cmocka_unit_test(test_every_device_reduces_its_part),
             cmocka_unit_test(test_runtimes_and_streams_share_a_device), cmocka_unit_test(test_failed_part_is_named),
             cmocka_unit_test(test_launches_go_out_before_any_wait),
             cmocka_unit_test(test_failed_part_waits_for_the_others))
