// scan_segments_min.cu -- scans along an axis with operator min (see scan_segments.cuh).
#include "axis/scan_segments.cuh"

GR_SCAN_SEGMENTS_OP(MIN)
