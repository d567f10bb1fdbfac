// reduce_segments_argmax.cu -- axis reductions with operator argmax (see reduce_segments.cuh).
#include "axis/reduce_segments.cuh"

GR_REDUCE_SEGMENTS_OP(ARGMAX)
