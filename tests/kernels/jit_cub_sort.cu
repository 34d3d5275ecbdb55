// CUB's BlockRadixSort and BlockScan: each block of 128 threads holds 512 elements, 4 per thread in
// order (thread t has elements 4t..4t+3): it writes its keys sorted, and the exclusive prefix sums of
// its values. The tail block pads its keys with the largest key, which sorts last and is not written.
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_scan.cuh>

extern "C" __global__ void sort_and_scan(const unsigned *keys, unsigned *sorted, const int *values, int *prefix,
                                         int n) {
    using Sort = cub::BlockRadixSort<unsigned, 128, 4>;
    using Scan = cub::BlockScan<int, 128>;
    __shared__ union {
        typename Sort::TempStorage sort;
        typename Scan::TempStorage scan;
    } tmp;
    int first = blockIdx.x * 512 + threadIdx.x * 4;
    unsigned k[4];
    int v[4];
    for (int i = 0; i < 4; i++) {
        k[i] = first + i < n ? keys[first + i] : 0xffffffffu;
        v[i] = first + i < n ? values[first + i] : 0;
    }
    Sort(tmp.sort).Sort(k);
    __syncthreads(); /* the union's storage passes from the sort to the scan */
    Scan(tmp.scan).ExclusiveSum(v, v);
    for (int i = 0; i < 4; i++)
        if (first + i < n) {
            sorted[first + i] = k[i];
            prefix[first + i] = v[i];
        }
}
