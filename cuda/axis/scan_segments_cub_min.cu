// scan_segments_cub_min.cu -- variant cub of the scans along an axis, operator min (see scan_segments_cub.cuh).
#include "axis/scan_segments_cub.cuh"

GR_SCAN_SEGMENTS_CUB_OP(MIN)
