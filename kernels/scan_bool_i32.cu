// scan_bool_i32.cu - the scan kernels for uint8_t inputs accumulated in int32_t (a unit of its own so the
// dtype pairs compile in parallel).
#include "scan_launch.cuh"

CUSCAN_INSTANTIATE_SCAN(uint8_t, int32_t)
