// scan_segments_prod.cu -- scans along an axis with operator prod (see scan_segments.cuh).
#include "axis/scan_segments.cuh"

GR_SCAN_SEGMENTS_OP(PROD)
