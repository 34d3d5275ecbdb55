#include "jit/resources.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jit/arch.h"

/* A description keeps at most this much of them: a binary of many kernels must not push the
 * warnings out of the description's bound. */
#define MAX_DESCRIBED (16u << 10)

/* One function as a tool reports it; -1 where it says nothing. */
typedef struct report {
    long registers, frame, cumulative, stack, local, shared, spill_stores, spill_loads;
} report;

static const report unknown = {-1, -1, -1, -1, -1, -1, -1, -1};

/* Reads "N unit" items separated by commas ("Used 34 registers, used 1 barriers, 256 bytes smem";
 * "800 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"; "used 46 registers, used 1
 * barriers, 264 stack, 1280 bytes smem, 536 bytes cmem[0], 0 bytes lmem") into r. */
static void read_items(const char *p, const char *end, report *r) {
    static const struct {
        const char *unit;
        size_t offset;
    } units[] = {
        {"registers", offsetof(report, registers)},
        {"bytes stack frame", offsetof(report, frame)},
        {"bytes cumulative stack size", offsetof(report, cumulative)},
        {"stack", offsetof(report, stack)},
        {"bytes lmem", offsetof(report, local)},
        {"bytes smem", offsetof(report, shared)},
        {"bytes spill stores", offsetof(report, spill_stores)},
        {"bytes spill loads", offsetof(report, spill_loads)},
    };
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *item_end = comma ? comma : end;
        while (p < item_end && (isspace((unsigned char)*p) || *p == '.')) p++;
        if (item_end - p > 5 && strncasecmp(p, "used ", 5) == 0) p += 5;
        char *after;
        long n = strtol(p, &after, 10);
        if (after > p && after < item_end) {
            while (after < item_end && *after == ' ') after++;
            size_t len = (size_t)(item_end - after);
            while (len && isspace((unsigned char)after[len - 1])) len--;
            for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
                if (strlen(units[i].unit) == len && strncmp(after, units[i].unit, len) == 0)
                    *(long *)((char *)r + units[i].offset) = n;
        }
        p = comma ? comma + 1 : end;
    }
}

/* The functions of one log, by name, with whether each is a kernel ("entry function"). */
typedef struct function {
    char *name;
    int kernel;
    report r;
} function;

typedef struct functions {
    function *items;
    size_t count, cap;
    int oom;
} functions;

static function *function_named(functions *fs, const char *name, size_t len) {
    for (size_t i = 0; i < fs->count; i++)
        if (strlen(fs->items[i].name) == len && strncmp(fs->items[i].name, name, len) == 0) return &fs->items[i];
    if (fs->count == fs->cap) {
        size_t cap = fs->cap ? 2 * fs->cap : 16;
        function *grown = realloc(fs->items, cap * sizeof *grown);
        if (!grown) return fs->oom = 1, NULL;
        fs->items = grown;
        fs->cap = cap;
    }
    char *copy = kj__strndup(name, len);
    if (!copy) return fs->oom = 1, NULL;
    fs->items[fs->count] = (function){copy, 0, unknown};
    return &fs->items[fs->count++];
}

static void functions_free(functions *fs) {
    for (size_t i = 0; i < fs->count; i++) free(fs->items[i].name);
    free(fs->items);
}

static long known(long v) { return v < 0 ? 0 : v; }

static int push(kj__resources *res, const kj_resource_usage *u) {
    kj_resource_usage *grown = realloc(res->items, (res->count + 1) * sizeof *grown);
    if (!grown) return -1;
    res->items = grown;
    res->items[res->count] = *u;
    if (!(res->items[res->count].symbol = kj__strdup(u->symbol))) return -1;
    res->count++;
    return 0;
}

static int starts(const char *line, const char *end, const char *prefix) {
    size_t n = strlen(prefix);
    return (size_t)(end - line) >= n && strncmp(line, prefix, n) == 0;
}

/* After "TOOL info    : " (the tools pad the word to a column). */
static const char *after_colon(const char *line, const char *end) {
    const char *c = memchr(line, ':', (size_t)(end - line));
    if (!c) return end;
    for (c++; c < end && *c == ' ';) c++;
    return c;
}

char *kj__resources_from_ptxas(const char *log, kj__resources *res) {
    functions fs = {0};
    kj__buf kept = {0};
    int oom = kj__buf_puts(&kept, "");
    function *current = NULL;
    for (const char *line = log ? log : ""; *line;) {
        const char *eol = strchr(line, '\n'), *end = eol ? eol : line + strlen(line);
        if (starts(line, end, "ptxas info")) {
            const char *p = after_colon(line, end);
            static const char entry[] = "Compiling entry function '", props[] = "Function properties for ";
            if (starts(p, end, entry)) {
                const char *name = p + sizeof entry - 1, *q = memchr(name, '\'', (size_t)(end - name));
                function *f = q ? function_named(&fs, name, (size_t)(q - name)) : NULL;
                if (f) f->kernel = 1;
            } else if (starts(p, end, props)) {
                current = function_named(&fs, p + sizeof props - 1, (size_t)(end - p - (sizeof props - 1)));
            } else if (current && starts(p, end, "Used ")) {
                read_items(p, end, &current->r);
            }
        } else if (starts(line, end, "ptxas ") && after_colon(line, end) == end &&
                   memchr(line, '.', (size_t)(end - line))) {
            /* "ptxas         .     N bytes stack frame, ...": the function named last */
            if (current) read_items(memchr(line, '.', (size_t)(end - line)), end, &current->r);
        } else {
            oom |= kj__buf_append(&kept, line, (size_t)(end - line) + (eol != NULL));
        }
        line = eol ? eol + 1 : end;
    }
    size_t had = res->count;
    for (size_t i = 0; i < fs.count && !oom && !fs.oom; i++) {
        const function *f = &fs.items[i];
        if (!f->kernel) continue;
        kj_resource_usage u = {f->name,
                               (int)known(f->r.registers),
                               (int)known(f->r.spill_stores),
                               (int)known(f->r.spill_loads),
                               (int)known(f->r.cumulative >= 0 ? f->r.cumulative : f->r.frame),
                               (int)known(f->r.shared)};
        oom |= push(res, &u);
    }
    functions_free(&fs);
    if (oom || fs.oom) {
        while (res->count > had) free((char *)res->items[--res->count].symbol);
        kj__buf_free(&kept);
        return NULL;
    }
    /* no trailing new line, as the logs have none */
    while (kept.len && kept.data[kept.len - 1] == '\n') kept.data[--kept.len] = '\0';
    return kept.data;
}

/* nvJitLink counts in a kernel's shared memory the 1 KiB that compute capability 9.0 reserves per
 * block for the system once the kernel uses shared memory at all; ptxas does not, nor the driver's
 * CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES. Measured with nvJitLink 13.0 for sm_75 to sm_121: only sm_90
 * and sm_90a; test-resources checks it stays so. */
static long linker_reserved_shared(const char *arch, long shared) {
    return kj__arch_number(arch) == 90 && shared >= 1024 ? 1024 : 0;
}

char *kj__resources_from_linker(const char *info, const char *arch, kj__resources *res) {
    kj__buf kept = {0};
    int oom = kj__buf_puts(&kept, "");
    kj_resource_usage *current = NULL;
    for (const char *line = info ? info : ""; *line;) {
        const char *eol = strchr(line, '\n'), *end = eol ? eol : line + strlen(line);
        if (starts(line, end, "info ")) {
            const char *p = after_colon(line, end);
            static const char props[] = "Function properties for '";
            if (starts(p, end, props)) {
                const char *name = p + sizeof props - 1, *q = memchr(name, '\'', (size_t)(end - name));
                current = NULL;
                for (size_t i = 0; q && i < res->count && !current; i++)
                    if (strlen(res->items[i].symbol) == (size_t)(q - name) &&
                        strncmp(res->items[i].symbol, name, (size_t)(q - name)) == 0)
                        current = &res->items[i];
            } else if (current && starts(p, end, "used ")) {
                report r = unknown;
                read_items(p, end, &r);
                if (r.registers >= 0) current->registers = (int)r.registers;
                if (r.stack >= 0) current->stack_bytes = (int)(r.stack + known(r.local));
                if (r.shared >= 0)
                    current->shared_static_bytes = (int)(r.shared - linker_reserved_shared(arch, r.shared));
                current = NULL;
            }
        } else if (end > line) {
            oom |= kj__buf_append(&kept, line, (size_t)(end - line) + (eol != NULL));
        }
        line = eol ? eol + 1 : end;
    }
    if (oom) {
        kj__buf_free(&kept);
        return NULL;
    }
    while (kept.len && kept.data[kept.len - 1] == '\n') kept.data[--kept.len] = '\0';
    return kept.data;
}

static const char tag[] = "resources: ";

void kj__resources_describe(const kj__resources *res, kj__buf *d) {
    size_t start = d->len;
    for (size_t i = 0; i < res->count && d->len - start < MAX_DESCRIBED; i++) {
        const kj_resource_usage *u = &res->items[i];
        kj__buf_printf(d, "%s%d %d %d %d %d %s\n", tag, u->registers, u->spill_store_bytes, u->spill_load_bytes,
                       u->stack_bytes, u->shared_static_bytes, u->symbol);
    }
}

/* "R SS SL ST SH SYMBOL" (one line, no new line in it): 0 with u filled (symbol pointing into line),
 * -1 when it does not read so (an entry of another version: then no resources). */
static int read_described(const char *line, size_t len, kj_resource_usage *u, size_t *symbol_len) {
    int *fields[] = {&u->registers, &u->spill_store_bytes, &u->spill_load_bytes, &u->stack_bytes,
                     &u->shared_static_bytes};
    const char *p = line, *end = line + len;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        long v = 0;
        const char *digits = p;
        while (p < end && *p >= '0' && *p <= '9' && v <= INT_MAX / 10) v = v * 10 + (*p++ - '0');
        if (p == digits || p == end || *p != ' ' || v > INT_MAX) return -1;
        *fields[i] = (int)v;
        p++;
    }
    if (p == end) return -1;
    u->symbol = p;
    *symbol_len = (size_t)(end - p);
    return 0;
}

int kj__resources_from_description(const char *desc, kj__resources *res) {
    size_t had = res->count;
    for (const char *line = desc; line && *line;) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        kj_resource_usage u = {0};
        size_t symbol_len;
        if (len > sizeof tag - 1 && strncmp(line, tag, sizeof tag - 1) == 0 &&
            read_described(line + sizeof tag - 1, len - (sizeof tag - 1), &u, &symbol_len) == 0) {
            char *symbol = kj__strndup(u.symbol, symbol_len);
            u.symbol = symbol;
            int failed = !symbol || push(res, &u) != 0;
            free(symbol);
            if (failed) {
                while (res->count > had) free((char *)res->items[--res->count].symbol);
                return -1;
            }
        }
        line = eol ? eol + 1 : line + len;
    }
    return 0;
}

int kj__resources_add(kj__resources *to, const kj__resources *from) {
    size_t had = to->count;
    for (size_t i = 0; i < from->count; i++)
        if (push(to, &from->items[i]) != 0) {
            while (to->count > had) free((char *)to->items[--to->count].symbol);
            return -1;
        }
    return 0;
}

const kj_resource_usage *kj__resources_find(const kj__resources *res, const char *symbol) {
    for (size_t i = 0; symbol && i < res->count; i++)
        if (strcmp(res->items[i].symbol, symbol) == 0) return &res->items[i];
    return NULL;
}

void kj__resources_free(kj__resources *res) {
    for (size_t i = 0; i < res->count; i++) free((char *)res->items[i].symbol);
    free(res->items);
    res->items = NULL;
    res->count = 0;
}
