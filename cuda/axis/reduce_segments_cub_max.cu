// reduce_segments_cub_max.cu -- variant cub of the axis reductions, operator max (see reduce_segments_cub.cuh).
#include "axis/reduce_segments_cub.cuh"

GR_REDUCE_SEGMENTS_CUB_OP(MAX)
