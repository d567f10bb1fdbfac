// reduce_segments_cub_min.cu -- variant cub of the axis reductions, operator min (see reduce_segments_cub.cuh).
#include "axis/reduce_segments_cub.cuh"

GR_REDUCE_SEGMENTS_CUB_OP(MIN)
