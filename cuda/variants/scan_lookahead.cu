// scan_lookahead.cu -- variant `lookahead`: the run-to-run deterministic single-pass scan whose window prefixes
// are carried ahead in window order by each window's last tile (what it fixes in `ordered_lookback`, and how:
// lookahead_prefix.cuh), on the look-back tile kernel of lookback_tiles.cuh.
#include "variants/lookahead_prefix.cuh"

GR_SCAN_VARIANT(lookahead, gr::Lookback<gr::LookaheadPrefix>)
