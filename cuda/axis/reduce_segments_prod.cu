// reduce_segments_prod.cu -- axis reductions with operator prod (see reduce_segments.cuh).
#include "axis/reduce_segments.cuh"

GR_REDUCE_SEGMENTS_OP(PROD)
