// scan_f32_f64.cu - the scan kernels for float inputs accumulated in double (a unit of its own so the
// dtype pairs compile in parallel).
#include "scan_launch.cuh"

CUSCAN_INSTANTIATE_SCAN(float, double)
