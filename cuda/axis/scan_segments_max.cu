// scan_segments_max.cu -- scans along an axis with operator max (see scan_segments.cuh).
#include "axis/scan_segments.cuh"

GR_SCAN_SEGMENTS_OP(MAX)
