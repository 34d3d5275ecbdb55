// A program made of other kernel files: it only includes them.
#include "jit_half.cu"
#include "jit_atomic.cu"
