// The float64 arithmetic of logcumsumexp (kernels/lse_math.cuh) compiled for the host and checked
// against long double: exp(x) as s * 2^k, and log(s * 2^k). spec/lse_math_spec.lua builds and runs
// it; it prints the worst errors it saw.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include "lse_math.cuh"

using namespace cuscan;
static const LseTables kTables = CS_LSE_TABLES;

int main(int argc, char **argv)
{
    srand(argc > 1 ? atoi(argv[1]) : 1);
    const double scales[] = { 1e-3, 1, 30, 700, 1e6, 1e13 };
    long double worst_exp = 0, worst_log = 0;
    for (int t = 0; t < 3000000; t++) {
        const double x = ((double)rand() / RAND_MAX * 2 - 1) * scales[t % 6];
        int64_t k;
        double s;
        lse_exp(x, kTables, k, s);
        // exp(x) = s 2^k, so log s + k ln2 - x is its relative error; for |x| > 1 measured against
        // x's magnitude (as a perturbation of x), which is what long double can resolve there
        const long double e = logl((long double)s) + (long double)k * 0.693147180559945309417232121458L - x;
        if (fabsl(e) / fmaxl(1.0L, fabsl(x)) > worst_exp) worst_exp = fabsl(e) / fmaxl(1.0L, fabsl(x));
        // the log of a sum: s anywhere in [0.5, 2^40) with the same k, against logl, relative to
        // the result's magnitude (or absolute below 1)
        const double sum = s * (1.0 + ldexp((double)rand() / RAND_MAX, rand() % 40));
        const long double want = logl((long double)sum) + (long double)k * 0.693147180559945309417232121458L;
        const long double err = fabsl((long double)lse_log(k, sum, kTables) - want) / fmaxl(1.0L, fabsl(want));
        if (err > worst_log) worst_log = err;
    }
    printf("exp %.3Lg log %.3Lg\n", worst_exp, worst_log);
    return 0;
}
