// scan_i64_i64.cu - the scan kernels for int64_t inputs accumulated in int64_t (a unit of its own so the
// dtype pairs compile in parallel).
#include "scan_launch.cuh"

CUSCAN_INSTANTIATE_SCAN(int64_t, int64_t)
