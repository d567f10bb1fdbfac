/* jit.h -- kernels compiled on first use: what the CUDA side asks of the C side (src/jit.c).
 *
 * A kernel outside the hot set (abi/hot_set.def) is named by a C++ name expression of a template in one of the
 * programs below, compiled by NVRTC for the current device's architecture the first time a process needs it,
 * kept on disk (a later process loads it without compiling) and in the process (a later call looks it up). */
#ifndef GPUREDUCE_JIT_H
#define GPUREDUCE_JIT_H

#include "abi/gpureduce.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The programs: each is the text of one device header of cuda/, compiled with the headers it includes. */
typedef enum gr_jit_program {
    GR_JIT_COPY_STRIDED = 0, /* axis/copy_strided_kernel.cuh: gr::copy_strided_kernel<In, Out> */
    GR_JIT_REDUCE_SEGMENTS = 1, /* axis/segments_kernels.cuh: the axis reductions' kernels of a Reducer */
    GR_JIT_SCAN_SEGMENTS = 2, /* axis/scan_segments_kernels.cuh: the axis scans' kernels of an operator */
    GR_JIT_REDUCE_SEGMENTS_CUB = 3, /* axis/reduce_segments_cub_kernels.cuh: CUB's segmented reduction of a Reducer */
    GR_JIT_SCAN_SEGMENTS_CUB = 4, /* axis/scan_segments_cub_kernels.cuh: CUB's scan-by-key of an operator */
    GR_JIT_REDUCE_RANGES = 5, /* axis/ranges_kernels.cuh: the segmented reductions' kernels of a Reducer */
    GR_JIT_SCAN_RANGES = 6, /* axis/scan_ranges_kernels.cuh: the segmented scans' kernels of an operator */
    GR_JIT_EXACT_SUM = 7, /* variants/exact_sum_kernels.cuh: the exact sum's kernel of a floating type */
    GR_JIT_EXACT_SEGMENTS = 8, /* axis/exact_segments_kernels.cuh: the exact sum's kernels along axes */
    GR_JIT_GROUP_SCATTER = 9, /* axis/group_scatter_kernels.cuh: grouped sums over ids in any order */
    GR_JIT_EXACT_SCAN = 10, /* axis/exact_scan_kernels.cuh: the exact cumsum's kernels */
    GR_JIT_PROGRAM_COUNT
} gr_jit_program;

/* The kernel `name_expression` of `program` for the current device, to launch with cudaLaunchKernel.  Safe from
 * any thread without the GIL.  GR_ERR_JIT when it cannot be had (no NVRTC, no toolkit headers, a compile
 * error): gr_jit_error() says why; GR_ERR_CUDA when loading it failed (*cuda_error). */
gr_status gr_jit_kernel(gr_jit_program program, const char *name_expression, void **kernel, int *cuda_error);

/* The name expression of the cast (in, out) in GR_JIT_COPY_STRIDED into buf, and 1, when that cast compiles on
 * first use; 0 when it is compiled ahead of time (both dtypes in the hot set). */
int gr_copy_strided_jit_name(gr_dtype in, gr_dtype out, char *buf, size_t size);

/* Calls each(context, program, name expression) for every kernel compiled on first use, in a fixed order (what
 * `python -m gpureduce warm` compiles); stops early when each returns nonzero, and returns that. */
int gr_jit_each_kernel(int (*each)(void *context, gr_jit_program program, const char *name), void *context);

/* Why the calling thread's last gr_jit_kernel failed with GR_ERR_JIT ("" when it did not). */
const char *gr_jit_error(void);

#ifdef __cplusplus
}
#endif

#endif /* GPUREDUCE_JIT_H */
