// scan_f32_f32.cu - the scan kernels for float inputs accumulated in float (a unit of its own so the
// dtype pairs compile in parallel).
#include "scan_launch.cuh"

CUSCAN_INSTANTIATE_SCAN(float, float)
