// reduce_segments_max.cu -- axis reductions with operator max (see reduce_segments.cuh).
#include "axis/reduce_segments.cuh"

GR_REDUCE_SEGMENTS_OP(MAX)
