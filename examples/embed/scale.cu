//@kernjit summary  y = x * FACTOR elementwise: the example host program's own kernel (examples/embed)
//@kernjit entry    scale
//@kernjit param    ELEM_TYPE float double = float
//@kernjit param    FACTOR 1..16 = 2
//@kernjit tune     BLOCK_SIZE pow2 32..1024 = 256

// The metadata block above is optional: without it kernjit accepts any well-formed -D macro. With it,
// a value outside the list (ELEM_TYPE=int, FACTOR=100) is refused before NVRTC runs, with a message
// naming the allowed values.
//
// Macro names share one namespace with NVRTC's built-in headers, which are full of templates over
// `T`: -DT=float would break them, hence ELEM_TYPE.
extern "C" __global__ void __launch_bounds__(BLOCK_SIZE)
    scale(ELEM_TYPE *y, const ELEM_TYPE *x, unsigned long long n) {
    const unsigned long long i = (unsigned long long)blockIdx.x * BLOCK_SIZE + threadIdx.x;
    if (i < n) y[i] = x[i] * (ELEM_TYPE)FACTOR;
}
