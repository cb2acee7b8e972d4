// The benchmark's peer for chapter 4: CUB's device-wide radix sort, called directly, doing
// exactly the work gpulab's sorts do — uint32 keys (all 32 bits), read from one buffer and
// written sorted to another (SortKeys), or with uint32 values moved alongside (SortPairs).
// No input copy, no allocation in the timed call (the temporary storage is allocated once by
// the caller), the default stream.
//
// Built on the GPU machine with nvcc into a shared library (gpulab/radix/peer.py) and called
// through ctypes with device pointers; it is not part of the library's kernels.
#include <cub/device/device_radix_sort.cuh>
#include <cstdint>

extern "C" {

// Bytes of temporary storage CUB needs for n keys (pairs != 0: with values).
int gpulab_cub_temp_bytes(int pairs, int n, size_t* bytes) {
    *bytes = 0;
    cudaError_t err;
    if (pairs)
        err = cub::DeviceRadixSort::SortPairs(nullptr, *bytes, (const uint32_t*)nullptr, (uint32_t*)nullptr,
                                              (const uint32_t*)nullptr, (uint32_t*)nullptr, n);
    else
        err = cub::DeviceRadixSort::SortKeys(nullptr, *bytes, (const uint32_t*)nullptr, (uint32_t*)nullptr, n);
    return (int)err;
}

int gpulab_cub_sort_keys(void* temp, size_t temp_bytes, const uint32_t* keys_in, uint32_t* keys_out, int n) {
    return (int)cub::DeviceRadixSort::SortKeys(temp, temp_bytes, keys_in, keys_out, n);
}

int gpulab_cub_sort_pairs(void* temp, size_t temp_bytes, const uint32_t* keys_in, uint32_t* keys_out,
                          const uint32_t* values_in, uint32_t* values_out, int n) {
    return (int)cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, values_in, values_out, n);
}

int gpulab_cub_version() { return CUB_VERSION; }

}  // extern "C"
