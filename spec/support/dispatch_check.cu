// spec/dispatch_spec.lua's check, built for the host with nvcc: kernels/scan_dispatch.cu linked
// against stand-ins for the scan units (UNITS_FILE: one UNIT(part, dir, pair) line for each unit the
// Makefile builds), each of which records its name. Every dtype pair, op, direction, mask and reset
// is dispatched; a plan must reach the unit of its part and direction, or be refused where the pair
// has no unit for that part. Prints "N plans, M routed wrongly".
#include <cstdio>
#include <cstring>
#include "../../kernels/scan_dispatch.cu"

static char called[64];
#define UNIT(PART, DIR, NAME)                                                                    \
    cs_status cuscan::scan_##PART##_##DIR##_##NAME(const cs_scan_plan *, int)                  \
    {                                                                                          \
        snprintf(called, sizeof called, "%s", #PART "_" #DIR "_" #NAME);                        \
        return CS_OK;                                                                          \
    }
#include UNITS_FILE

extern "C" {
cs_status cs_fail(cs_status status, const char *, ...) { return status; }
const char *cs_dtype_name(cs_dtype) { return "?"; }
void *cs_cuda_stream_handle(void) { return nullptr; }
cs_status cs_cuda_ready(void) { return CS_OK; }
cs_status cs_cuda_check(int, const char *) { return CS_OK; }
}

int main()
{
    int bad = 0, n = 0;
    static unsigned char byte;
    const cs_scan_op ops[] = { CS_SCAN_SUM, CS_SCAN_PROD, CS_SCAN_MAX, CS_SCAN_MIN, CS_SCAN_LOGSUMEXP };
#define CHECK_PAIR(NAME, IN, OUT, IN_T, ACC_T, OUT_T, OPS)                                                          \
    for (cs_scan_op op : ops)                                                                                       \
        for (int rev = 0; rev < 2; rev++)                                                                           \
            for (int msk = 0; msk < 2; msk++)                                                                       \
                for (int rst = 0; rst < 2; rst++) {                                                                 \
                    cs_scan_plan p;                                                                                 \
                    memset(&p, 0, sizeof p);                                                                        \
                    p.op = op, p.reverse = rev, p.in_dtype = IN, p.out_dtype = OUT;                                 \
                    p.mask = msk ? &byte : nullptr, p.reset = rst ? &byte : nullptr;                                \
                    const bool arith = op == CS_SCAN_SUM || op == CS_SCAN_PROD;                                     \
                    const unsigned ops_ = (OPS);                                                                    \
                    const char *part = arith ? (rst ? "reset" : msk ? "masked" : "plain") : op == CS_SCAN_LOGSUMEXP ? "lse" : "maxmin"; \
                    const bool has = arith ? (ops_ & (CS_OPS_SUM | CS_OPS_PROD)) != 0                               \
                                   : op == CS_SCAN_LOGSUMEXP ? (ops_ & CS_OPS_LSE) != 0 : (ops_ & CS_OPS_MAXMIN) != 0; \
                    char want[64];                                                                                  \
                    snprintf(want, sizeof want, "%s_%s_%s", part, rev ? "rev" : "fwd", #NAME);                      \
                    called[0] = 0;                                                                                  \
                    const cs_status st = cs_cuda_scan(&p);                                                          \
                    n++;                                                                                            \
                    if (has ? (st != CS_OK || strcmp(called, want) != 0) : (st == CS_OK || called[0])) {            \
                        bad++;                                                                                      \
                        printf("%s op %d reverse %d mask %d reset %d: reached '%s' (status %d), want %s\n", #NAME,  \
                               (int)op, rev, msk, rst, called, (int)st, has ? want : "a refusal");                  \
                    }                                                                                               \
                }
    CS_SCAN_PAIRS(CHECK_PAIR)
    printf("%d plans, %d routed wrongly\n", n, bad);
    return bad != 0;
}
