/* kernjit info: devices and toolchain. */
#include <string.h>

#include "cli.h"

static void help(void) {
    printf("usage: kernjit info [--json]\n"
           "\n"
           "Lists each CUDA device (name, compute capability and architecture,\n"
           "multiprocessors, memory and its theoretical bandwidth, L2, warp size, threads,\n"
           "blocks and registers per block and per multiprocessor, shared memory per\n"
           "multiprocessor and per block with and without opt-in, the shared-memory\n"
           "carveouts the architecture offers) and the toolchain (NVRTC, nvJitLink, the\n"
           "device runtime, the architectures NVRTC can target), and the remote cache's\n"
           "state when one is configured (KERNJIT_REMOTE_CACHE: the server, its version, the\n"
           "round trip). With no GPU it says \"no CUDA device\" and exits 0.\n");
}

#define MAX_CARVEOUTS 16

static void print_device_text(const kj_device_info *d) {
    unsigned kib[MAX_CARVEOUTS];
    size_t nk = kj_device_carveouts(d, kib, MAX_CARVEOUTS);
    printf("device %d: %s\n", d->ordinal, d->name);
    printf("  compute capability   %d.%d (%s, %s)\n", d->cc_major, d->cc_minor, d->arch, d->arch_name);
    printf("  multiprocessors      %d\n", d->sm_count);
    printf("  memory               %.1f GiB\n", d->total_memory / 1073741824.0);
    if (d->peak_bandwidth_gbs > 0)
        printf("  peak bandwidth       %.0f GB/s (theoretical: 2 x %.0f MHz memory clock x %d-bit bus)\n",
               d->peak_bandwidth_gbs, d->memory_clock_khz / 1e3, d->memory_bus_bits);
    else printf("  peak bandwidth       unknown (the driver reports no memory clock)\n");
    printf("  L2 cache             %zu KiB\n", d->l2_bytes / 1024);
    printf("  warp size            %d\n", d->warp_size);
    printf("  threads              %d per block, %d per multiprocessor\n", d->max_threads_per_block,
           d->max_threads_per_sm);
    printf("  blocks               %d per multiprocessor\n", d->max_blocks_per_sm);
    printf("  registers            %d per block, %d per multiprocessor\n", d->regs_per_block, d->regs_per_sm);
    printf("  shared memory        %zu KiB per block (%zu KiB with opt-in), %zu KiB per multiprocessor\n",
           d->shared_per_block / 1024, d->shared_per_block_optin / 1024, d->shared_per_sm / 1024);
    printf("  shared carveouts    ");
    for (size_t i = 0; i < nk && i < MAX_CARVEOUTS; i++) printf(" %u", kib[i]);
    printf(" KiB per multiprocessor (the L1/shared-memory split a kernel may prefer)\n");
    printf("  driver               CUDA %d.%d\n", d->driver_version / 1000, d->driver_version % 1000 / 10);
}

static void print_device_json(const kj_device_info *d) {
    json_begin_object();
    json_fields("ordinal=%d name=%s", d->ordinal, d->name);
    json_arch("arch", d->cc_major, d->cc_minor);
    json_fields("arch_name=%s sm_count=%d memory_bytes=%zu peak_bandwidth_gbps=%g memory_clock_khz=%d "
                "memory_bus_bits=%d l2_bytes=%zu warp_size=%d max_threads_per_block=%d max_threads_per_sm=%d "
                "max_blocks_per_sm=%d registers_per_block=%d registers_per_sm=%d shared_per_block_bytes=%zu "
                "shared_per_block_optin_bytes=%zu shared_per_sm_bytes=%zu",
                d->arch_name, d->sm_count, d->total_memory, d->peak_bandwidth_gbs, d->memory_clock_khz,
                d->memory_bus_bits, d->l2_bytes, d->warp_size, d->max_threads_per_block, d->max_threads_per_sm,
                d->max_blocks_per_sm, d->regs_per_block, d->regs_per_sm, d->shared_per_block, d->shared_per_block_optin,
                d->shared_per_sm);
    unsigned kib[MAX_CARVEOUTS];
    size_t nk = kj_device_carveouts(d, kib, MAX_CARVEOUTS);
    json_begin_array("shared_carveouts_bytes");
    for (size_t i = 0; i < nk && i < MAX_CARVEOUTS; i++) json_uint(NULL, kib[i] * 1024ull);
    json_end_array();
    json_cuda_version("driver_version", d->driver_version);
    json_end_object();
}

/* --json (user: the flag) or --help */
static int option(void *user, int opt, char *arg) {
    (void)arg;
    if (opt == 'h') return help(), CLI_DONE;
    *(int *)user = 1;
    return EXIT_OK;
}

int cmd_info(int argc, char **argv) {
    static const cli_option_set set = {"json=j help=h", option};
    int json = 0, rc = cli_getopt("info", argc, argv, &set, 1, &json);
    if (rc != EXIT_OK) return rc == CLI_DONE ? EXIT_OK : rc;

    kj_toolchain tc = KJ_TOOLCHAIN_INIT;
    kj_toolchain_query(&tc);
    int count = 0;
    kj_status s = kj_device_count(&count);
    const char *why = s == KJ_OK ? "" : kj_last_error();
    char why_copy[512];
    snprintf(why_copy, sizeof why_copy, "%s", why);

    /* the remote tier through a runtime that touches nothing else: no device, no disk cache */
    kj_runtime_options o = KJ_RUNTIME_OPTIONS_INIT;
    cli_runtime_options(&o, 1, NULL, 0);
    o.cache_mode = KJ_CACHE_MEMORY_ONLY;
    kj_runtime *rt = NULL;
    kj_status rs = kj_runtime_create(&o, &rt);
    char remote_error[1024];
    snprintf(remote_error, sizeof remote_error, "%s", rs == KJ_OK ? "" : kj_last_error());
    kj_remote_info remote = KJ_REMOTE_INFO_INIT;
    if (rs == KJ_OK) kj_remote_query(rt, &remote);

    if (json) {
        json_begin_object();
        json_string("kernjit_version", kj_version_string());
        json_object_in("toolchain");
        json_cuda_version("nvrtc_version", tc.nvrtc_version);
        json_cuda_version("nvjitlink_version", tc.nvjitlink_version);
        json_fields("toolkit_dir=%s device_runtime_path=%s", tc.cuda_home, tc.devrt_path);
        json_begin_array("archs");
        for (int i = 0; i < tc.arch_count; i++) json_arch(NULL, tc.archs[i] / 10, tc.archs[i] % 10);
        json_end_array();
        json_end_object();
        if (rs == KJ_OK) cli_print_remote(&remote, 1);
        else json_string("remote_error", remote_error);
        json_begin_array("devices");
    } else {
        printf("kernjit %s\n", kj_version_string());
        printf("toolchain: NVRTC %d.%d, nvJitLink %d.%d, CUDA at %s\n", tc.nvrtc_version / 1000,
               tc.nvrtc_version % 1000 / 10, tc.nvjitlink_version / 1000, tc.nvjitlink_version % 1000 / 10,
               tc.cuda_home);
        printf("device runtime: %s\n",
               tc.devrt_path ? tc.devrt_path : "missing (dynamic-parallelism kernels cannot link)");
        printf("NVRTC targets:");
        for (int i = 0; i < tc.arch_count; i++) printf(" sm_%d", tc.archs[i]);
        printf("\n");
        if (rs == KJ_OK) cli_print_remote(&remote, 0);
        else printf("remote cache: %s\n", remote_error);
        printf("\n");
    }
    int failed = 0;
    for (int i = 0; i < count; i++) {
        kj_device_info d = KJ_DEVICE_INFO_INIT;
        kj_status ds = kj_device_query(i, &d);
        if (ds != KJ_OK) {
            failed = cli_fail("info", ds);
            continue;
        }
        if (json) print_device_json(&d);
        else print_device_text(&d);
    }
    if (json) {
        json_end_array();
        if (count == 0) json_string("note", *why_copy ? why_copy : "no CUDA device");
        json_end_object();
    } else if (count == 0) {
        printf("no CUDA device%s%s\n", *why_copy ? ": " : "", why_copy);
    }
    kj_runtime_destroy(rt); /* after printing: the strings of remote are the runtime's */
    if (rs != KJ_OK) return cli_fail("info", rs);
    return failed;
}
