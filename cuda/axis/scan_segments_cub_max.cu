// scan_segments_cub_max.cu -- variant cub of the scans along an axis, operator max (see scan_segments_cub.cuh).
#include "axis/scan_segments_cub.cuh"

GR_SCAN_SEGMENTS_CUB_OP(MAX)
