#!/bin/bash
# builds bench/tune/lib<name>.so from bench/tune/<name>.cu (default: harness) with the C core and
# element-wise unit of a CUDA build (OBJ, default build/obj-cuda)
set -e
cd "$(dirname "$0")/../.."
name=${1:-harness}
lib=bench/tune/lib${name}.so
[ "$name" = harness ] && lib=bench/tune/libtune.so
nvcc -O3 -std=c++17 -Xcompiler -fPIC,-fvisibility=hidden -Isrc -Ikernels -gencode arch=compute_90,code=sm_90 -Xptxas -v -c bench/tune/$name.cu -o bench/tune/$name.o 2> bench/tune/ptxas-$name.log
obj=${OBJ:-build/obj-cuda}
objs=$(ls $obj/*.o $obj/cpu/*.o $obj/cuda/*.o $obj/kernels/elementwise.o)
cc -O3 -shared -o $lib $objs bench/tune/$name.o -fopenmp -lm -lpthread -lmvec -L/usr/local/cuda/lib64 -lcudart_static -lrt -ldl -lstdc++ -Wl,-z,defs -Wl,-z,nodelete -Wl,--exclude-libs,ALL
ls -la $lib
