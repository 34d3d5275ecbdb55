// Scalars of 1, 2 and 8 bytes next to a pointer: checks that each --arg reaches the kernel with the
// size and bytes the driver expects.
extern "C" __global__ void scalars(unsigned char a, short b, double c, long long *out) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        out[0] = a;
        out[1] = b;
        out[2] = (long long)c;
    }
}
