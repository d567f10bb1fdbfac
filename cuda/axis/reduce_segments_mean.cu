// reduce_segments_mean.cu -- axis reductions with operator mean (see reduce_segments.cuh).
#include "axis/reduce_segments.cuh"

GR_REDUCE_SEGMENTS_OP(MEAN)
