// reduce_segments_sum.cu -- axis reductions with operator sum (see reduce_segments.cuh).
#include "axis/reduce_segments.cuh"

GR_REDUCE_SEGMENTS_OP(SUM)
