/* Which device a command runs on: --device N, for every command that opens one (the run and bench
 * harnesses, launch). */
#ifndef KJ_CLI_DEVICES_H
#define KJ_CLI_DEVICES_H

#include <stddef.h>

/* The ordinal the command's runtimes open: KJ_DEVICE_AUTO until --device sets it (cli_runtime_options
 * reads it). */
extern int cli_device;

/* The line the harnesses' --help ends with. */
#define CLI_DEVICE_HELP "\n--device N runs on device N (default 0; `kernjit info` lists them).\n"

/* --device ARG: an ordinal of a device that exists, into cli_device. A usage error names the devices
 * there are. With no device at all it is taken as given: opening it says there is none. */
int cli_device_arg(const char *cmd, const char *arg);

/* "0 (NAME), 1 (NAME)" for the devices there are ("none" when there is none), in buf. */
const char *cli_device_list(char *buf, size_t size);

#endif
