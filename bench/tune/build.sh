#!/bin/bash
# builds bench/tune/libtune.so: the C core and element-wise unit of build/obj-cuda with bench/tune/harness.cu
set -e
cd "$(dirname "$0")/../.."
nvcc -O3 -std=c++17 -Xcompiler -fPIC,-fvisibility=hidden -Isrc -Ikernels -gencode arch=compute_90,code=sm_90 -Xptxas -v -c bench/tune/harness.cu -o bench/tune/harness.o 2> bench/tune/ptxas.log
objs=$(ls build/obj-cuda/*.o build/obj-cuda/cpu/*.o build/obj-cuda/cuda/*.o build/obj-cuda/kernels/elementwise.o)
cc -O3 -shared -o bench/tune/libtune.so $objs bench/tune/harness.o -fopenmp -lm -lpthread -lmvec -L/usr/local/cuda/lib64 -lcudart_static -lrt -ldl -lstdc++ -Wl,-z,defs -Wl,-z,nodelete -Wl,--exclude-libs,ALL
ls -la bench/tune/libtune.so
