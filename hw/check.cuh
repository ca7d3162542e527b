// CHECK(call): stops the program with the file, line and CUDA's message when a runtime call
// fails. Shared by hw/kernels.cu and hw/chase.cu.
#pragma once
#include <cstdio>
#include <cstdlib>

#define CHECK(x)                                                                          \
    do {                                                                                  \
        cudaError_t e_ = (x);                                                             \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(2);                                                                      \
        }                                                                                 \
    } while (0)
