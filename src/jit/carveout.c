/* kj_device_carveouts: the shared-memory capacities an architecture can split off its unified
 * L1/shared-memory array. The driver does not report them; they are the CUDA programming guide's
 * per-architecture lists. A carveout (a percentage of the largest) selects among these, and the
 * driver rounds up to the next capacity that holds the blocks it wants to run. */
#include <stddef.h>

#include "kernjit.h"

/* Capacities in KiB, smallest first. */
static const unsigned volta[] = {0, 8, 16, 32, 64, 96};
static const unsigned turing[] = {32, 64};
static const unsigned ampere_a100[] = {0, 8, 16, 32, 64, 100, 132, 164};
static const unsigned ampere_ga10x[] = {0, 8, 16, 32, 64, 100};
static const unsigned hopper[] = {0, 8, 16, 32, 64, 100, 132, 164, 196, 228};
/* The steps every architecture since Volta shares, for one kernjit does not know. */
static const unsigned steps[] = {0, 8, 16, 32, 64, 100, 132, 164, 196, 228};

#define LIST(a) a, sizeof a / sizeof a[0]

static size_t copy_out(const unsigned *list, size_t n, unsigned *kib, size_t max) {
    for (size_t i = 0; i < n && i < max; i++) kib[i] = list[i];
    return n;
}

size_t kj_device_carveouts(const kj_device_info *d, unsigned *kib, size_t max) {
    if (!d) return 0;
    if (!kib) max = 0;
    int cc = d->cc_major * 10 + d->cc_minor;
    switch (cc) {
    case 70:
    case 72: return copy_out(LIST(volta), kib, max);
    case 75: return copy_out(LIST(turing), kib, max);
    case 80:
    case 87: return copy_out(LIST(ampere_a100), kib, max);
    case 86:
    case 89:
    case 120:
    case 121: return copy_out(LIST(ampere_ga10x), kib, max);
    case 90:
    case 100:
    case 103: return copy_out(LIST(hopper), kib, max);
    default: break;
    }
    /* Unknown: the usual steps up to the shared memory a multiprocessor has. */
    size_t n = 0;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        if ((size_t)steps[i] * 1024 > d->shared_per_sm) break;
        if (n < max) kib[n] = steps[i];
        n++;
    }
    return n;
}
