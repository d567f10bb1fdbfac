// reduce_segments_cub_argmax.cu -- variant cub of the axis reductions, operator argmax (see reduce_segments_cub.cuh).
#include "axis/reduce_segments_cub.cuh"

GR_REDUCE_SEGMENTS_CUB_OP(ARGMAX)
