#include "devices.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_device = KJ_DEVICE_AUTO;
const char *cli_arch;

const char *cli_device_list(char *buf, size_t size) {
    int count = 0;
    snprintf(buf, size, "none");
    if (kj_device_count(&count) != KJ_OK) return buf;
    size_t used = 0;
    for (int i = 0; i < count && used < size; i++) {
        kj_device_info d = KJ_DEVICE_INFO_INIT;
        const char *name = kj_device_query(i, &d) == KJ_OK ? d.name : "?";
        used += (size_t)snprintf(buf + used, size - used, "%s%d (%s)", i ? ", " : "", i, name);
    }
    return buf;
}

static int device_count(void) {
    int count = 0;
    return kj_device_count(&count) == KJ_OK ? count : 0;
}

/* The ordinal that text (len bytes) writes, or -1 when it is not one. */
static int ordinal_of(const char *text, size_t len) {
    size_t digits = strspn(text, "0123456789");
    return digits > 0 && digits < 7 && digits == len ? atoi(text) : -1;
}

int cli_device_arg(const char *cmd, const char *arg) {
    int count = device_count(), v = ordinal_of(arg, strlen(arg));
    if (v >= 0 && (count == 0 || v < count)) {
        cli_device = v;
        return EXIT_OK;
    }
    char list[1024];
    if (v >= 0)
        return cli_usage(cmd, "--device %s does not exist: the devices are %s", arg,
                         cli_device_list(list, sizeof list));
    return cli_usage(cmd, "--device '%s' is not a device ordinal: the devices are %s", arg,
                     cli_device_list(list, sizeof list));
}

int cli_devices_arg(const char *cmd, const char *arg, cli_devices *out) {
    int count = device_count();
    char list[1024];
    if (count == 0) return cli_error_as(cmd, KJ_ERR_NO_DEVICE, "--devices %s: there is no CUDA device", arg);
    out->count = 0;
    if (strcmp(arg, "all") == 0) {
        if (count > CLI_MAX_DEVICES)
            return cli_usage(cmd, "--devices all: %d devices; list at most %d", count, CLI_MAX_DEVICES);
        for (int i = 0; i < count; i++) out->ordinals[out->count++] = i;
        return EXIT_OK;
    }
    for (const char *p = arg;; p++) {
        size_t len = strcspn(p, ",");
        int v = ordinal_of(p, len);
        if (v < 0)
            return cli_usage(cmd,
                             "--devices '%s': '%.*s' is not a device ordinal: give all, or ordinals such as 0,1; "
                             "the devices are %s",
                             arg, (int)(len < 64 ? len : 64), p, cli_device_list(list, sizeof list));
        if (v >= count)
            return cli_usage(cmd, "--devices %s: device %d does not exist: the devices are %s", arg, v,
                             cli_device_list(list, sizeof list));
        for (int i = 0; i < out->count; i++)
            if (out->ordinals[i] == v) return cli_usage(cmd, "--devices %s: device %d is listed twice", arg, v);
        if (out->count == CLI_MAX_DEVICES)
            return cli_usage(cmd, "--devices %s: at most %d devices", arg, CLI_MAX_DEVICES);
        out->ordinals[out->count++] = v;
        p += len;
        if (!*p) return EXIT_OK;
    }
}

int cli_devices_check(const char *cmd, const cli_devices *d) {
    if (!d->count) return EXIT_OK;
    if (cli_device != KJ_DEVICE_AUTO)
        return cli_usage(cmd, "--device %d and --devices: give one (--devices lists every device the work uses)",
                         cli_device);
    cli_device = d->ordinals[0];
    return EXIT_OK;
}

kj_status cli_device_runtime(int ordinal, kj_runtime **rt) {
    kj_runtime_options o;
    cli_runtime_options(&o, 0, NULL, 0);
    o.device = ordinal;
    return kj_runtime_create(&o, rt);
}
