// scan_i32_i64.cu - the scan kernels for int32_t inputs accumulated in int64_t (a unit of its own so the
// dtype pairs compile in parallel).
#include "scan_launch.cuh"

CUSCAN_INSTANTIATE_SCAN(int32_t, int64_t)
