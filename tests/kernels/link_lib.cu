// The other source of link_main.cu's program: definitions only, no kernel of its own.
#include "link_lib.cuh"

__device__ float lib_weight = LIB_WEIGHT;

__device__ float lib_blend(float x, float y) { return 3.0f * x - y; }
