// scan_segments_sum.cu -- scans along an axis with operator sum (see scan_segments.cuh).
#include "axis/scan_segments.cuh"

GR_SCAN_SEGMENTS_OP(SUM)
