/* Every built-in kernel builds for every target this NVRTC has, with no GPU: each entry, at its
 * defaults and at its tunables' extremes (the smallest and the largest value of each, in variants
 * that keep the metadata's `require` lines), for each architecture nvrtcGetSupportedArchs lists, so
 * that a new toolkit's new target is covered the day it appears. Fast paths that need a newer
 * architecture must be guarded, with a plain path below (reduce's L2 prefetch hint, griddepcontrol).
 * A param value that some targets have no instructions for (reduce's bf16, native from sm_80) is
 * built too, every entry at the defaults, as a plan of its own.
 *
 * The compiles run in worker processes (NVRTC scales across processes, not threads), one per
 * processor, taking jobs from a counter they share. A target the toolkit itself cannot build for (its
 * device runtime has no code for it, so kernels that launch kernels cannot be linked) is listed as
 * the toolkit's named gap, checked to say exactly that; every other failure fails the test. */
#include "test_util.h"

#include <sys/mman.h>

#include "jit/link.h"

#define MAX_JOBS 8192
#define MAX_VARIANTS 16
#define MESSAGE 1024

typedef struct kernel_plan {
    const char *name;
    kj_define fixed; /* a param held at a value, or {NULL, NULL} */
    kj_kernel_desc *desc;
    kj_space *space;
    size_t variants[MAX_VARIANTS]; /* indices into the space: the default first */
    size_t variant_count;
} kernel_plan;

typedef struct job {
    const kernel_plan *kernel;
    const char *entry;
    size_t variant;
    int arch;
} job;

typedef struct outcome {
    int done;
    kj_status status;
    double ms;
    char message[MESSAGE];
} outcome;

typedef struct shared {
    size_t next; /* the next job to take */
    outcome out[MAX_JOBS];
} shared;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* The value's index of dimension dim that is the smallest (want_max 0) or the largest: by number
 * where the values are numbers, else the first or the last listed. */
static size_t extreme(const kj_space *space, size_t dim, int want_max) {
    size_t n = kj_space_dim_size(space, dim), best = want_max ? n - 1 : 0;
    double best_v = 0;
    for (size_t i = 0; i < n; i++) {
        char *end;
        double v = strtod(kj_space_dim_value(space, dim, i), &end);
        if (*end) return want_max ? n - 1 : 0;
        if (i == 0 || (want_max ? v > best_v : v < best_v)) best = i, best_v = v;
    }
    return best;
}

/* The default's value index of each dimension. */
static void defaults(const kernel_plan *k, size_t *coords) {
    for (size_t d = 0; d < kj_space_dim_count(k->space); d++) {
        coords[d] = 0;
        for (size_t p = 0; p < kj_desc_param_count(k->desc); p++) {
            kj_param_info info = KJ_PARAM_INFO_INIT;
            KJ_ASSERT_OK(kj_desc_param(k->desc, p, &info));
            if (strcmp(info.name, kj_space_dim_name(k->space, d)) != 0) continue;
            for (size_t v = 0; v < kj_space_dim_size(k->space, d); v++)
                if (strcmp(kj_space_dim_value(k->space, d, v), info.default_value) == 0) coords[d] = v;
        }
    }
}

/* The default variant, then few valid variants that hold, between them, every tunable's smallest
 * and largest value (greedily: each adds the one that holds most extremes not yet held). */
static void plan_variants(kernel_plan *k) {
    size_t dims = kj_space_dim_count(k->space), def[16], goal[16][2];
    int held[16][2];
    assert_true(dims <= 16);
    defaults(k, def);
    for (size_t d = 0; d < dims; d++) {
        goal[d][0] = extreme(k->space, d, 0);
        goal[d][1] = extreme(k->space, d, 1);
        held[d][0] = goal[d][0] == def[d];
        held[d][1] = goal[d][1] == def[d];
    }
    size_t index = 0;
    for (size_t d = 0; d < dims; d++) index = index * kj_space_dim_size(k->space, d) + def[d];
    k->variants[k->variant_count++] = index;
    for (;;) {
        size_t best = 0, best_gain = 0;
        for (size_t i = 0; i < kj_space_count(k->space); i++) {
            kj_variant v = KJ_VARIANT_INIT;
            KJ_ASSERT_OK(kj_space_variant(k->space, i, &v));
            if (v.skipped) continue;
            size_t gain = 0;
            for (size_t d = 0; d < dims; d++)
                for (int e = 0; e < 2; e++) gain += !held[d][e] && v.coords[d] == goal[d][e];
            if (gain > best_gain) best = i, best_gain = gain;
        }
        if (!best_gain) break;
        kj_variant v = KJ_VARIANT_INIT;
        KJ_ASSERT_OK(kj_space_variant(k->space, best, &v));
        for (size_t d = 0; d < dims; d++)
            for (int e = 0; e < 2; e++) held[d][e] |= v.coords[d] == goal[d][e];
        assert_true(k->variant_count < MAX_VARIANTS);
        k->variants[k->variant_count++] = best;
    }
    for (size_t d = 0; d < dims; d++)
        if (!held[d][0] || !held[d][1])
            fail_msg("%s: no valid variant has %s=%s or %s", k->name, kj_space_dim_name(k->space, d),
                     kj_space_dim_value(k->space, d, goal[d][0]), kj_space_dim_value(k->space, d, goal[d][1]));
}

/* A worker: takes jobs until none is left, each compiled by its own compile-only runtime with no disk
 * cache (every job a real compile). */
static void work(const job *jobs, size_t n, shared *sh) {
    kj_runtime *rt = kj_test_runtime_for(NULL, KJ_DEVICE_NONE, NULL, NULL);
    for (size_t i; (i = __atomic_fetch_add(&sh->next, 1, __ATOMIC_RELAXED)) < n;) {
        const job *j = &jobs[i];
        outcome *o = &sh->out[i];
        kj_variant v = KJ_VARIANT_INIT;
        char arch[16];
        snprintf(arch, sizeof arch, "sm_%d", j->arch);
        kj_space_variant(j->kernel->space, j->variant, &v);
        kj_request req = {.size = sizeof req,
                          .kernel = j->kernel->name,
                          .entry = j->entry,
                          .defines = v.defines,
                          .define_count = v.define_count,
                          .arch = arch}; /* the plan's fixed param included */
        double t0 = now_ms();
        o->status = rt ? kj_compile(rt, &req, NULL) : KJ_ERR_HOST_MEMORY;
        o->ms = now_ms() - t0;
        if (o->status != KJ_OK) snprintf(o->message, sizeof o->message, "%s", rt ? kj_last_error() : "no runtime");
        __atomic_store_n(&o->done, 1, __ATOMIC_RELEASE);
    }
    kj_runtime_destroy(rt);
}

/* The param values built as plans of their own (above). */
static const struct {
    const char *kernel;
    kj_define fixed;
} fixed_plans[] = {{"reduce", {"T", "bf16"}}};
#define FIXED_PLANS (sizeof fixed_plans / sizeof fixed_plans[0])

static void test_every_builtin_for_every_target(void **state) {
    (void)state;
    kj_toolchain tc = KJ_TOOLCHAIN_INIT;
    KJ_ASSERT_OK(kj_toolchain_query(&tc));
    assert_true(tc.arch_count > 0);
    size_t kernels = kj_builtin_count();
    size_t plans = kernels + FIXED_PLANS;
    kernel_plan *plan = calloc(plans, sizeof *plan);
    job *jobs = calloc(MAX_JOBS, sizeof *jobs);
    assert_non_null(plan);
    assert_non_null(jobs);
    size_t n = 0;
    for (size_t k = 0; k < plans; k++) {
        kernel_plan *kp = &plan[k];
        kp->name = k < kernels ? kj_builtin_name(k) : fixed_plans[k - kernels].kernel;
        if (k >= kernels) kp->fixed = fixed_plans[k - kernels].fixed;
        KJ_ASSERT_OK(kj_describe(NULL, kp->name, &kp->desc));
        KJ_ASSERT_OK(
            kj_space_create(NULL, kp->name, kp->fixed.name ? &kp->fixed : NULL, kp->fixed.name ? 1 : 0, &kp->space));
        if (k < kernels) {
            plan_variants(kp);
        } else { /* the default variant alone */
            size_t def[16], index = 0;
            defaults(kp, def);
            for (size_t d = 0; d < kj_space_dim_count(kp->space); d++)
                index = index * kj_space_dim_size(kp->space, d) + def[d];
            kp->variants[kp->variant_count++] = index;
        }
        for (int a = 0; a < tc.arch_count; a++)
            for (size_t e = 0; e < kj_desc_entry_count(kp->desc); e++)
                for (size_t v = 0; v < kp->variant_count; v++) {
                    assert_true(n < MAX_JOBS);
                    jobs[n++] = (job){kp, kj_desc_entry(kp->desc, e), kp->variants[v], tc.archs[a]};
                }
    }
    shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(sh != MAP_FAILED);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t workers = cpus < 1 ? 1 : (size_t)cpus > n ? n : (size_t)cpus;
    double t0 = now_ms();
    pid_t pids[256];
    if (workers > 256) workers = 256;
    for (size_t w = 0; w < workers; w++) {
        pids[w] = fork();
        assert_true(pids[w] >= 0);
        if (pids[w] == 0) {
            work(jobs, n, sh);
            _exit(0);
        }
    }
    for (size_t w = 0; w < workers; w++) {
        int st = 0;
        assert_int_equal(waitpid(pids[w], &st, 0), pids[w]);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("worker %zu ended with status 0x%x", w, st);
    }
    double wall = now_ms() - t0, cpu = 0;
    size_t failed = 0, gaps = 0;
    printf("targets:");
    for (int a = 0; a < tc.arch_count; a++) printf(" sm_%d", tc.archs[a]);
    printf("\n");
    for (size_t k = 0; k < plans; k++) {
        printf("  %-11s %zu entries x", plan[k].name, kj_desc_entry_count(plan[k].desc));
        if (plan[k].fixed.name) printf(" %s=%s x", plan[k].fixed.name, plan[k].fixed.value);
        for (size_t i = 0; i < plan[k].variant_count; i++) {
            kj_variant v = KJ_VARIANT_INIT;
            KJ_ASSERT_OK(kj_space_variant(plan[k].space, plan[k].variants[i], &v));
            printf("%s [%s]%s", i ? "," : "", *v.label ? v.label : "no tunables", i ? "" : " (the default)");
        }
        printf("\n");
    }
    for (size_t i = 0; i < n; i++) {
        const outcome *o = &sh->out[i];
        const job *j = &jobs[i];
        cpu += o->ms;
        if (!o->done) fail_msg("job %zu (%s %s sm_%d) was not done", i, j->kernel->name, j->entry, j->arch);
        if (o->status == KJ_OK) continue;
        char gap[128];
        snprintf(gap, sizeof gap, "has no code for sm_%d: kernels that launch kernels cannot be built", j->arch);
        int is_gap = o->status == KJ_ERR_LINK && strstr(o->message, "this toolkit's device runtime (") &&
                     strstr(o->message, gap) && kj_desc_needs_device_runtime(j->kernel->desc) &&
                     kj__devrt_has_code(j->arch) == 0;
        if (is_gap) {
            gaps++;
            continue;
        }
        kj_variant v = KJ_VARIANT_INIT;
        kj_space_variant(j->kernel->space, j->variant, &v);
        if (failed++ < 8)
            printf("FAILED %s %s [%s%s%s%s%s] for sm_%d: %s: %s\n", j->kernel->name, j->entry,
                   j->kernel->fixed.name ? j->kernel->fixed.name : "", j->kernel->fixed.name ? "=" : "",
                   j->kernel->fixed.name ? j->kernel->fixed.value : "", j->kernel->fixed.name ? " " : "", v.label,
                   j->arch, kj_status_name(o->status), o->message);
    }
    printf("%zu compiles (%zu kernels, every entry and variant, %d targets) in %.1f s on %zu processes "
           "(%.1f s of compiling, %.0f ms each on average)\n",
           n, kernels, tc.arch_count, wall / 1000, workers, cpu / 1000, n ? cpu / (double)n : 0.0);
    if (gaps) {
        printf("the toolkit's own gaps (%zu compiles): its device runtime (%s) has no code for", gaps, tc.devrt_path);
        for (int a = 0; a < tc.arch_count; a++)
            if (kj__devrt_has_code(tc.archs[a]) == 0) printf(" sm_%d", tc.archs[a]);
        printf(", so these cannot be built for them:\n");
        for (size_t k = 0; k < kernels; k++)
            if (kj_desc_needs_device_runtime(plan[k].desc)) printf("  %s (launches kernels)\n", plan[k].name);
    }
    for (size_t k = 0; k < plans; k++) {
        kj_space_free(plan[k].space);
        kj_desc_free(plan[k].desc);
    }
    munmap(sh, sizeof *sh);
    free(plan);
    free(jobs);
    if (failed) fail_msg("%zu of %zu compiles failed", failed, n);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_every_builtin_for_every_target)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
