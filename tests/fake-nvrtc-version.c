/* An NVRTC that says it is another version (LD_PRELOAD): what a toolkit upgrade changes in every
 * cache key, for tests/test-seed.sh. Compiles still go to the real NVRTC: only the version is
 * interposed. */
#include <nvrtc.h>

nvrtcResult nvrtcVersion(int *major, int *minor);

nvrtcResult nvrtcVersion(int *major, int *minor) {
    *major = 13;
    *minor = 9;
    return NVRTC_SUCCESS;
}
