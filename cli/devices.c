#include "devices.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_device = KJ_DEVICE_AUTO;

const char *cli_device_list(char *buf, size_t size) {
    int count = 0;
    snprintf(buf, size, "none");
    if (kj_device_count(&count) != KJ_OK) return buf;
    size_t used = 0;
    for (int i = 0; i < count && used < size; i++) {
        kj_device_info d;
        if (kj_device_query(i, &d) != KJ_OK) snprintf(d.name, sizeof d.name, "?");
        used += (size_t)snprintf(buf + used, size - used, "%s%d (%s)", i ? ", " : "", i, d.name);
    }
    return buf;
}

int cli_device_arg(const char *cmd, const char *arg) {
    int count = 0;
    if (kj_device_count(&count) != KJ_OK) count = 0;
    size_t digits = strspn(arg, "0123456789");
    int number = digits > 0 && digits < 7 && arg[digits] == '\0';
    int v = number ? atoi(arg) : -1;
    if (number && (count == 0 || v < count)) {
        cli_device = v;
        return EXIT_OK;
    }
    char list[1024];
    if (number)
        return cli_usage(cmd, "--device %s does not exist: the devices are %s", arg, cli_device_list(list, sizeof list));
    return cli_usage(cmd, "--device '%s' is not a device ordinal: the devices are %s", arg,
                     cli_device_list(list, sizeof list));
}
