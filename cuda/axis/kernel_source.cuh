// kernel_source.cuh -- how an axis family's host half launches a kernel it holds as a handle: one compiled ahead
// of time (its address) or one compiled on first use (abi/jit.h: a cudaKernel_t), both launched by
// cudaLaunchKernel.  The families' kernel sets (AotSegKernels / JitSegKernels in axis/segments.cuh, their scan
// twins in axis/scan_segments.cuh) hand the handles out; this file has what they share.
#pragma once
#include <cstdio>
#include <initializer_list>
#include <cuda_runtime.h>
#include "abi/jit.h"
#include "axis/hot_set.cuh"
#include "primitives/types.cuh"  // dtype_type_name

namespace gr {

// A kernel's signature, `void (*)(P...)`, and its launch: each argument converted to the parameter type the
// kernel declares, so that cudaLaunchKernel reads every one at its size.  The ahead-of-time sets take their
// kernels' addresses as this type (a mismatch does not compile); the first-use ones are named by templates of
// the same headers, which NVRTC instantiates with the same parameters.
template <class Signature>
struct Launcher;
template <class... P>
struct Launcher<void (*)(P...)> {
    static cudaError_t run(const void *kernel, dim3 grid, dim3 block, cudaStream_t stream, P... params) {
        void *args[sizeof...(P)] = {static_cast<void *>(&params)...};
        return cudaLaunchKernel(kernel, grid, block, args, 0, stream);
    }
};

// A launch with its arguments given by address, cudaLaunchKernel's own form: for host code written once for many
// element types (axis/segments.cuh), which holds a Reducer's state as its bytes.  Each address must hold a value
// of the type the kernel declares for that parameter (cudaLaunchKernel reads each at its parameter's size).
inline cudaError_t launch_by_address(const void *kernel, dim3 grid, dim3 block, cudaStream_t stream,
                                     std::initializer_list<const void *> arguments) {
    void *args[8];
    int n = 0;
    for (const void *a : arguments) args[n++] = const_cast<void *>(a);
    return cudaLaunchKernel(kernel, grid, block, args, 0, stream);
}

// An ahead-of-time kernel's handle: its address, taken as the signature its launches use (a kernel of another
// signature does not convert, so it does not compile).
template <class Signature>
gr_status aot_kernel(const void **kernel, Signature f) {
    *kernel = reinterpret_cast<const void *>(f);
    return GR_OK;
}

// A first-use kernel's handle (abi/jit.h): kernel `k` of `names` (a family's first-use set, whose name(k, buf,
// size) writes the kernel's name expression in PROGRAM), compiled or found.
template <gr_jit_program PROGRAM, class Names, class Kind>
gr_status jit_kernel(const Names &names, Kind k, const void **kernel, int *cuda_error) {
    char name[2048];  // CUB's kernels name their Reducer five times
    names.name(k, name, sizeof name);
    void *compiled = nullptr;
    const gr_status st = gr_jit_kernel(PROGRAM, name, &compiled, cuda_error);
    *kernel = compiled;
    return st;
}

// What a first-use kernel of an axis reduction is instantiated with, as C++ names: the Reducer (reducers.cuh:
// reducer_alternative of the operator, the kernel types and the Reducer's number) and the input type.
struct ReducerNames {
    char red[200], in[48];
    ReducerNames(gr_op op, gr_dtype in_dtype, gr_dtype out_dtype, int alternative) {
        char out[48];
        dtype_type_name(in_dtype, in, sizeof in);
        dtype_type_name(out_dtype, out, sizeof out);
        std::snprintf(red, sizeof red, "gr::reducer_alternative<(gr_op)%d, %s, %s, %d>::type", int(op), in, out,
                      alternative);
    }
};

// What a first-use kernel of an axis scan is instantiated with, as C++ names: the operator's functor, the input and
// result types (gpureduce's scan kernels and CUB's scan-by-key alike).
struct ScanNames {
    char op[64], in[48], out[48];
    ScanNames(gr_op o, gr_dtype in_dtype, gr_dtype out_dtype) {
        std::snprintf(op, sizeof op, "gr::op_functor<(gr_op)%d>::type", int(o));
        dtype_type_name(in_dtype, in, sizeof in);
        dtype_type_name(out_dtype, out, sizeof out);
    }
};

}  // namespace gr
