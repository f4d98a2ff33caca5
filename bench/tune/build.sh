#!/bin/bash
# builds bench/tune/lib<name>.so from bench/tune/<name>.cu (default: harness) with the C core and
# element-wise unit of a CUDA build (OBJ, default build/obj-cuda)
set -e
cd "$(dirname "$0")/../.."
# (TUNE_ONLY=N: -DTUNE_ONLY=N, into lib<name>N.so, for harnesses that build one variant at a time)
name=${1:-harness}
tag=$name${TUNE_ONLY:-}
lib=bench/tune/lib${tag}.so
[ "$name" = harness ] && lib=bench/tune/libtune.so
nvcc -O3 -std=c++17 -Xcompiler -fPIC,-fvisibility=hidden -Isrc -Ikernels -gencode arch=compute_90,code=sm_90 -Xptxas -v \
  ${TUNE_ONLY:+-DTUNE_ONLY=$TUNE_ONLY} -c bench/tune/$name.cu -o bench/tune/$tag.o 2> bench/tune/ptxas-$tag.log
obj=${OBJ:-build/obj-cuda}
objs=$(ls $obj/*.o $obj/cpu/*.o $obj/cuda/*.o $obj/kernels/elementwise.o)
cc -O3 -shared -o $lib $objs bench/tune/$tag.o -fopenmp -lm -lpthread -lmvec -L/usr/local/cuda/lib64 -lcudart_static -lrt -ldl -lstdc++ -Wl,-z,defs -Wl,-z,nodelete -Wl,--exclude-libs,ALL
ls -la $lib
