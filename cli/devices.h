/* Which device a command runs on: --device N, for every command that opens one (the run and bench
 * harnesses, launch); and the target `kernjit run` builds for there (--arch). */
#ifndef KJ_CLI_DEVICES_H
#define KJ_CLI_DEVICES_H

#include <stddef.h>

#include "kernjit.h"

/* The ordinal the command's runtimes open: KJ_DEVICE_AUTO until --device sets it (cli_runtime_options
 * reads it). */
extern int cli_device;

/* The target the runtimes of a device open (cli_runtime_options reads it when given none): NULL, the
 * device's own sm_XY, until `kernjit run --arch` sets it. */
extern const char *cli_arch;

/* The line the harnesses' --help ends with. */
#define CLI_DEVICE_HELP "\n--device N runs on device N (default 0; `kernjit info` lists them).\n"

/* --device ARG: an ordinal of a device that exists, into cli_device. A usage error names the devices
 * there are. With no device at all it is taken as given: opening it says there is none. */
int cli_device_arg(const char *cmd, const char *arg);

/* "0 (NAME), 1 (NAME)" for the devices there are ("none" when there is none), in buf. */
const char *cli_device_list(char *buf, size_t size);

/* --devices all|LIST: the devices a command spreads its work over, in the order given. */
#define CLI_MAX_DEVICES 16
typedef struct cli_devices {
    int ordinals[CLI_MAX_DEVICES];
    int count; /* 0: --devices not given */
} cli_devices;

/* The line the --help of a command that takes --devices ends with. */
#define CLI_DEVICES_HELP                                                                                               \
    "--devices all|I,J,... splits the work over those devices, one runtime each,\n"                                    \
    "and combines the devices' results on the host in the order listed (not with\n"                                    \
    "--device).\n"

/* --devices ARG into *out: "all", or ordinals of devices that exist, each once. Usage errors name the
 * devices there are; with none at all, exit 1 (no CUDA device). */
int cli_devices_arg(const char *cmd, const char *arg, cli_devices *out);
/* After the options: --device and --devices together is a usage error; with --devices, the
 * command's first runtime (cli_runtime) opens the first device listed. */
int cli_devices_check(const char *cmd, const cli_devices *d);
/* A runtime on device `ordinal`, with the options cli_runtime uses. */
kj_status cli_device_runtime(int ordinal, kj_runtime **rt);

#endif
