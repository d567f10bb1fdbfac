// reduce_segments_min.cu -- axis reductions with operator min (see reduce_segments.cuh).
#include "axis/reduce_segments.cuh"

GR_REDUCE_SEGMENTS_OP(MIN)
