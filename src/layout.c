/* layout.c - iteration over the dims shared by a few tensors: drop size-1 dims, order the rest by
 * the first operand's strides, merge neighbours that are contiguous in every operand. Both backends
 * walk these to turn a linear index into per-operand element offsets. */
#include <unistd.h>
#include "internal.h"

void cs_iter_build(cs_iter *it, int n, const cs_tensor *const *ts, int skip)
{
    const cs_tensor *t0 = ts[0];
    int dims[CS_MAX_DIMS], nd = 0;
    for (int d = 0; d < t0->ndim; d++)
        if (d != skip && t0->shape[d] != 1) dims[nd++] = d;
    /* stable insertion sort, largest stride of operand 0 first */
    for (int i = 1; i < nd; i++) {
        int k = dims[i], j = i - 1;
        while (j >= 0 && t0->strides[dims[j]] < t0->strides[k]) { dims[j + 1] = dims[j]; j--; }
        dims[j + 1] = k;
    }
    it->ndim = 0;
    for (int i = 0; i < nd; i++) {
        int d = dims[i];
        int k = it->ndim;
        if (k > 0) {
            /* merge into the previous (outer) dim when every operand steps evenly across both */
            int ok = 1;
            for (int o = 0; o < n; o++)
                if (it->strides[o][k - 1] != ts[o]->strides[d] * t0->shape[d]) ok = 0;
            if (ok && it->shape[k - 1] > 0) {
                it->shape[k - 1] *= t0->shape[d];
                for (int o = 0; o < n; o++) it->strides[o][k - 1] = ts[o]->strides[d];
                continue;
            }
        }
        it->shape[k] = t0->shape[d];
        for (int o = 0; o < n; o++) it->strides[o][k] = ts[o]->strides[d];
        for (int o = n; o < CS_MAX_OPERANDS; o++) it->strides[o][k] = 0;
        it->ndim++;
    }
}

/* A GPU's driver node, native or under WSL: without one, no CUDA device can be there, whatever the
 * CUDA runtime reports. */
int cs_gpu_device_node(void)
{
    return access("/dev/nvidiactl", F_OK) == 0 || access("/dev/nvidia0", F_OK) == 0 || access("/dev/dxg", F_OK) == 0;
}

int64_t cs_iter_numel(const cs_iter *it)
{
    int64_t n = 1;
    for (int i = 0; i < it->ndim; i++) n *= it->shape[i];
    return n;
}
