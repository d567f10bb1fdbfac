// reduce_segments_argmin.cu -- axis reductions with operator argmin (see reduce_segments.cuh).
#include "axis/reduce_segments.cuh"

GR_REDUCE_SEGMENTS_OP(ARGMIN)
