// lse_math.cuh - the float64 arithmetic of logcumsumexp (scan_ops.cuh's LseOp): exp of an element
// as s * 2^k, and the log of such a sum. Table and short polynomial, so that an element costs about
// a dozen FP64 instructions where the library's exp and log cost several times that (bench/NOTES.md):
// logcumsumexp is bound by the GPU's FP64 rate, not by memory, unless its arithmetic is this lean.
// Host and device both compile these functions: spec/lse_math_spec.lua checks them on the host
// against long double (CS_LSE_TABLES gives it the tables the device reads).
#pragma once
#include <cstdint>
#include <cstring>
#include <cmath>

namespace cuscan {

#define CS_LSE_HD __host__ __device__ __forceinline__

struct LseTables {
    double exp2_frac[64];     // 2^(j/64)
    double log_recip[64][2];  // {R_j, L_j}: R_j = 1/c_j rounded, c_j = 1 + (j + 1/2)/64, L_j = -log(R_j)
};

// The tables' values, correctly rounded (from 60-digit decimals).
#define CS_LSE_TABLES \
    { \
        { \
          0x1.0000000000000p+0, 0x1.02c9a3e778061p+0, 0x1.059b0d3158574p+0, 0x1.0874518759bc8p+0, \
          0x1.0b5586cf9890fp+0, 0x1.0e3ec32d3d1a2p+0, 0x1.11301d0125b51p+0, 0x1.1429aaea92de0p+0, \
          0x1.172b83c7d517bp+0, 0x1.1a35beb6fcb75p+0, 0x1.1d4873168b9aap+0, 0x1.2063b88628cd6p+0, \
          0x1.2387a6e756238p+0, 0x1.26b4565e27cddp+0, 0x1.29e9df51fdee1p+0, 0x1.2d285a6e4030bp+0, \
          0x1.306fe0a31b715p+0, 0x1.33c08b26416ffp+0, 0x1.371a7373aa9cbp+0, 0x1.3a7db34e59ff7p+0, \
          0x1.3dea64c123422p+0, 0x1.4160a21f72e2ap+0, 0x1.44e086061892dp+0, 0x1.486a2b5c13cd0p+0, \
          0x1.4bfdad5362a27p+0, 0x1.4f9b2769d2ca7p+0, 0x1.5342b569d4f82p+0, 0x1.56f4736b527dap+0, \
          0x1.5ab07dd485429p+0, 0x1.5e76f15ad2148p+0, 0x1.6247eb03a5585p+0, 0x1.6623882552225p+0, \
          0x1.6a09e667f3bcdp+0, 0x1.6dfb23c651a2fp+0, 0x1.71f75e8ec5f74p+0, 0x1.75feb564267c9p+0, \
          0x1.7a11473eb0187p+0, 0x1.7e2f336cf4e62p+0, 0x1.82589994cce13p+0, 0x1.868d99b4492edp+0, \
          0x1.8ace5422aa0dbp+0, 0x1.8f1ae99157736p+0, 0x1.93737b0cdc5e5p+0, 0x1.97d829fde4e50p+0, \
          0x1.9c49182a3f090p+0, 0x1.a0c667b5de565p+0, 0x1.a5503b23e255dp+0, 0x1.a9e6b5579fdbfp+0, \
          0x1.ae89f995ad3adp+0, 0x1.b33a2b84f15fbp+0, 0x1.b7f76f2fb5e47p+0, 0x1.bcc1e904bc1d2p+0, \
          0x1.c199bdd85529cp+0, 0x1.c67f12e57d14bp+0, 0x1.cb720dcef9069p+0, 0x1.d072d4a07897cp+0, \
          0x1.d5818dcfba487p+0, 0x1.da9e603db3285p+0, 0x1.dfc97337b9b5fp+0, 0x1.e502ee78b3ff6p+0, \
          0x1.ea4afa2a490dap+0, 0x1.efa1bee615a27p+0, 0x1.f50765b6e4540p+0, 0x1.fa7c1819e90d8p+0, \
        }, \
        { \
          { 0x1.fc07f01fc07f0p-1, 0x1.fe02a6b106799p-8 }, { 0x1.f44659e4a4271p-1, 0x1.7b91b07d5b126p-6 }, \
          { 0x1.ecc07b301ecc0p-1, 0x1.39e87b9febd68p-5 }, { 0x1.e573ac901e574p-1, 0x1.b42dd711971b9p-5 }, \
          { 0x1.de5d6e3f8868ap-1, 0x1.16536eea37ae3p-4 }, { 0x1.d77b654b82c34p-1, 0x1.51b073f06183cp-4 }, \
          { 0x1.d0cb58f6ec074p-1, 0x1.8c345d6319b23p-4 }, { 0x1.ca4b3055ee191p-1, 0x1.c5e548f5bc743p-4 }, \
          { 0x1.c3f8f01c3f8f0p-1, 0x1.fec9131dbeabcp-4 }, { 0x1.bdd2b899406f7p-1, 0x1.1b72ad52f67a2p-3 }, \
          { 0x1.b7d6c3dda338bp-1, 0x1.371fc201e8f75p-3 }, { 0x1.b2036406c80d9p-1, 0x1.526e5e3a1b438p-3 }, \
          { 0x1.ac5701ac5701bp-1, 0x1.6d60fe719d21bp-3 }, { 0x1.a6d01a6d01a6dp-1, 0x1.87fa06520c911p-3 }, \
          { 0x1.a16d3f97a4b02p-1, 0x1.a23bc1fe2b561p-3 }, { 0x1.9c2d14ee4a102p-1, 0x1.bc286742d8cd4p-3 }, \
          { 0x1.970e4f80cb872p-1, 0x1.d5c216b4fbb94p-3 }, { 0x1.920fb49d0e229p-1, 0x1.ef0adcbdc5935p-3 }, \
          { 0x1.8d3018d3018d3p-1, 0x1.0402594b4d041p-2 }, { 0x1.886e5f0abb04ap-1, 0x1.1058bf9ae4ad4p-2 }, \
          { 0x1.83c977ab2beddp-1, 0x1.1c898c16999fbp-2 }, { 0x1.7f405fd017f40p-1, 0x1.2895a13de86a4p-2 }, \
          { 0x1.7ad2208e0ecc3p-1, 0x1.347dd9a987d56p-2 }, { 0x1.767dce434a9b1p-1, 0x1.404308686a7e4p-2 }, \
          { 0x1.724287f46debcp-1, 0x1.4be5f957778a1p-2 }, { 0x1.6e1f76b4337c7p-1, 0x1.5767717455a6cp-2 }, \
          { 0x1.6a13cd1537290p-1, 0x1.62c82f2b9c796p-2 }, { 0x1.661ec6a5122f9p-1, 0x1.6e08eaa2ba1e4p-2 }, \
          { 0x1.623fa77016240p-1, 0x1.792a55fdd47a1p-2 }, { 0x1.5e75bb8d015e7p-1, 0x1.842d1da1e8b18p-2 }, \
          { 0x1.5ac056b015ac0p-1, 0x1.8f11e873662c8p-2 }, { 0x1.571ed3c506b3ap-1, 0x1.99d958117e08ap-2 }, \
          { 0x1.5390948f40febp-1, 0x1.a484090e5bb09p-2 }, { 0x1.5015015015015p-1, 0x1.af1293247786bp-2 }, \
          { 0x1.4cab88725af6ep-1, 0x1.b9858969310fdp-2 }, { 0x1.49539e3b2d067p-1, 0x1.c3dd7a7cdad4dp-2 }, \
          { 0x1.460cbc7f5cf9ap-1, 0x1.ce1af0b85f3ecp-2 }, { 0x1.42d6625d51f87p-1, 0x1.d83e7258a2f3ep-2 }, \
          { 0x1.3fb013fb013fbp-1, 0x1.e24881a7c6c26p-2 }, { 0x1.3c995a47babe7p-1, 0x1.ec399d2468cc1p-2 }, \
          { 0x1.3991c2c187f63p-1, 0x1.f6123fa7028adp-2 }, { 0x1.3698df3de0748p-1, 0x1.ffd2e0857f497p-2 }, \
          { 0x1.33ae45b57bcb2p-1, 0x1.04bdf9da926d2p-1 }, { 0x1.30d190130d190p-1, 0x1.0986f4f573521p-1 }, \
          { 0x1.2e025c04b8097p-1, 0x1.0e44985d1cc8cp-1 }, { 0x1.2b404ad012b40p-1, 0x1.12f719593efbdp-1 }, \
          { 0x1.288b01288b013p-1, 0x1.179eabbd899a0p-1 }, { 0x1.25e22708092f1p-1, 0x1.1c3b81f713c25p-1 }, \
          { 0x1.23456789abcdfp-1, 0x1.20cdcd192ab6ep-1 }, { 0x1.20b470c67c0d9p-1, 0x1.2555bce98f7cap-1 }, \
          { 0x1.1e2ef3b3fb874p-1, 0x1.29d37fec2b08bp-1 }, { 0x1.1bb4a4046ed29p-1, 0x1.2e47436e40268p-1 }, \
          { 0x1.19453808ca29cp-1, 0x1.32b1339121d71p-1 }, { 0x1.16e0689427379p-1, 0x1.37117b54747b6p-1 }, \
          { 0x1.1485f0e0acd3bp-1, 0x1.3b68449fffc23p-1 }, { 0x1.12358e75d3033p-1, 0x1.3fb5b84d16f43p-1 }, \
          { 0x1.0fef010fef011p-1, 0x1.43f9fe2f9ce67p-1 }, { 0x1.0db20a88f4696p-1, 0x1.48353d1ea88dfp-1 }, \
          { 0x1.0b7e6ec259dc8p-1, 0x1.4c679afccee39p-1 }, { 0x1.0953f39010954p-1, 0x1.50913cc01686bp-1 }, \
          { 0x1.073260a47f7c6p-1, 0x1.54b2467999498p-1 }, { 0x1.05197f7d73404p-1, 0x1.58cadb5cd7989p-1 }, \
          { 0x1.03091b51f5e1ap-1, 0x1.5cdb1dc6c1765p-1 }, { 0x1.0101010101010p-1, 0x1.60e32f44788d9p-1 }, \
        }, \
    }

CS_LSE_HD int64_t lse_bits(double x)
{
    int64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}
CS_LSE_HD double lse_double(int64_t b)
{
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
}

constexpr double kLseLn2Hi = 0x1.62e42fefa39efp-1, kLseLn2Lo = 0x1.abc9e3b39803fp-56;   // ln 2 = hi + lo
constexpr double kLseLn2By64Hi = 0x1.62e42fefa39efp-7, kLseLn2By64Lo = 0x1.abc9e3b39803fp-62;
constexpr double kLse64ByLn2 = 0x1.71547652b82fep+6, kLseLog2E = 0x1.71547652b82fep+0;

// The constants of the exp and the log whose low 32 bits are not all zero. Device code reads them
// from the constant bank, where an FP64 instruction takes each as an operand; written as literals,
// the compiler rebuilt each in two registers at every use. The host reads the same values.
struct LseConstants {
    double ln2_hi, ln2_lo, ln2_by64_hi, ln2_by64_lo, by_ln2_64;
    double exp_c3, exp_c4, exp_c5, exp_c6;   // 1/3!, 1/4!, 1/5!, 1/6!
    double log_c3, log_c5, log_c6, log_c7;   // 1/3, 1/5, 1/6, 1/7
};
#define CS_LSE_CONSTANTS \
    { kLseLn2Hi, kLseLn2Lo, kLseLn2By64Hi, kLseLn2By64Lo, kLse64ByLn2, \
      1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 3, 1.0 / 5, 1.0 / 6, 1.0 / 7 }
#if defined(__CUDACC__)
static __constant__ LseConstants kLseConstantsDevice = CS_LSE_CONSTANTS;   // (not const: read, not folded)
#endif
CS_LSE_HD const LseConstants &lse_constants()
{
#if defined(__CUDA_ARCH__)
    return kLseConstantsDevice;
#else
    static constexpr LseConstants host = CS_LSE_CONSTANTS;
    return host;
#endif
}

// exp(x) = s * 2^k for finite |x| < 2^60: x = (64 k + j) ln2/64 + r with |r| <= ln2/128, so
// exp(x) = 2^k * 2^(j/64) * exp(r), exp(r) - 1 by Taylor to r^6 (the rest is below 3e-20).
// s lies in [0.99, 2). Below 2^44 the rounding of x 64/ln2 to a whole n is a single add of
// 1.5 * 2^52 (n sits in the low bits): lse_exp_near, with no branch; above, a conversion, and the
// library's exp takes the rest.
CS_LSE_HD void lse_exp_near(double x, const LseTables &t, int64_t &k, double &s)   // |x| < 2^44
{
    const LseConstants &c = lse_constants();
    constexpr double kMagic = 0x1.8p52;
    const double shifted = fma(x, c.by_ln2_64, kMagic);
    const int64_t n = lse_bits(shifted) - lse_bits(kMagic);
    const double nd = shifted - kMagic;
    const double r = fma(nd, -c.ln2_by64_lo, fma(nd, -c.ln2_by64_hi, x));
    double q = fma(r, c.exp_c6, c.exp_c5);
    q = fma(q, r, c.exp_c4);
    q = fma(q, r, c.exp_c3);
    q = fma(q, r, 0.5);
    q = fma(q, r, 1.0);
    const double f = t.exp2_frac[n & 63];
    s = fma(f, q * r, f);
    k = n >> 6;   // floor: n = 64 k + (n & 63)
}
CS_LSE_HD void lse_exp(double x, const LseTables &t, int64_t &k, double &s)
{
    if (fabs(x) < 0x1p44) {
        lse_exp_near(x, t, k, s);
    } else {
        const double kd = rint(x * kLseLog2E);
        k = (int64_t)kd;
        s = exp(fma(kd, -kLseLn2Lo, fma(kd, -kLseLn2Hi, x)));   // not normalised: r may reach ~90 here
    }
}

// k ln 2 + log(s) for a normal s > 0 and |k| < 2^62: s = m 2^e with m in [1, 2); m R_j - 1 = u with
// |u| <= 1/128 (j: m's top 6 fraction bits), log m = L_j + log1p(u), log1p(u) by Taylor to u^8
// (the rest is below 2e-20).
CS_LSE_HD double lse_log(int64_t k, double s, const LseTables &t)
{
    const int64_t b = lse_bits(s);
    const int64_t e = (b >> 52) - 1023;
    const int j = (int)(b >> 46) & 63;
    const double m = lse_double((b & 0x000fffffffffffffll) | 0x3ff0000000000000ll);
    const LseConstants &c = lse_constants();
    const double u = fma(m, t.log_recip[j][0], -1.0);
    double q = fma(u, -1.0 / 8, c.log_c7);
    q = fma(q, u, -c.log_c6);
    q = fma(q, u, c.log_c5);
    q = fma(q, u, -0.25);
    q = fma(q, u, c.log_c3);
    q = fma(q, u, -0.5);
    const double l = fma(u * q, u, u);
    const double ke = (double)(k + e);
    return fma(ke, c.ln2_hi, fma(ke, c.ln2_lo, t.log_recip[j][1] + l));
}

}  // namespace cuscan
