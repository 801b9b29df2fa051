/* xsum.c - exact sums of doubles in 68 fixed-point limbs of 32 bits (held in
 * int64 so that additions need no carry until 2^28 of them have piled up);
 * rounded to a double only when read. */
#include "ccsweep/util/xsum.h"
#include "ccsweep/util/common.h"

#include <math.h>
#include <string.h>

#define LIMB_BITS 32
#define LIMB_MASK UINT64_C(0xffffffff)
#define LIMB_BASE INT64_C(4294967296)
#define UNIT_EXP (-1074) /* limb 0, bit 0 weighs 2^-1074 */
/* Each addition adds less than 2^33 to a limb: 2^28 of them stay below 2^61. */
#define LOOSE_MAX (1 << 28)
#define ENC_HEAD 20

void xsum_zero(ccs_xsum *x)
{
    memset(x, 0, sizeof *x);
}

/* Carry every limb but the top into [0, 2^32); the top one keeps the sign.
 * (limb - low) is a multiple of 2^32, so the division is exact for either sign.
 * A top limb of 2^32 or more in magnitude weighs 2^1102, beyond any double by
 * far and beyond any sum of 2^63 of them: only merges of crafted decoded
 * states reach it. It saturates at +-(2^32 - 1) (the value is infinite either
 * way), so that no later addition overflows and xsum_encode writes what
 * xsum_decode reads. */
static void carry(ccs_xsum *x)
{
    for (int i = 0; i < XSUM_LIMBS - 1; i++) {
        int64_t low = (int64_t)((uint64_t)x->limb[i] & LIMB_MASK);
        x->limb[i + 1] += (x->limb[i] - low) / LIMB_BASE;
        x->limb[i] = low;
    }
    int64_t *top = &x->limb[XSUM_LIMBS - 1];
    if (*top >= LIMB_BASE)
        *top = LIMB_BASE - 1;
    else if (*top <= -LIMB_BASE)
        *top = -(LIMB_BASE - 1);
    x->loose = 0;
}

void xsum_add(ccs_xsum *x, double v)
{
    if (isnan(v) || v == 0)
        return;
    if (isinf(v)) { /* counted up to XSUM_INF_MAX: only whether any were matters */
        int64_t *c = v > 0 ? &x->pinf : &x->ninf;
        if (*c < XSUM_INF_MAX)
            (*c)++;
        return;
    }
    int e;
    double f = frexp(fabs(v), &e); /* |v| = f 2^e, f in [0.5, 1) */
    uint64_t m = (uint64_t)ldexp(f, 53);
    int p = e - 53 - UNIT_EXP; /* |v| = m 2^(p - 1074) */
    if (p < 0) {               /* subnormal: the low bits of m are zero */
        m >>= -p;
        p = 0;
    }
    int i = p / LIMB_BITS, s = p % LIMB_BITS;
    uint64_t a = (m & LIMB_MASK) << s, b = (m >> LIMB_BITS) << s; /* below 2^64 and 2^53 */
    int64_t w0 = (int64_t)(a & LIMB_MASK), w1 = (int64_t)((a >> LIMB_BITS) + (b & LIMB_MASK)),
            w2 = (int64_t)(b >> LIMB_BITS);
    if (v > 0) {
        x->limb[i] += w0;
        x->limb[i + 1] += w1;
        x->limb[i + 2] += w2;
    } else {
        x->limb[i] -= w0;
        x->limb[i + 1] -= w1;
        x->limb[i + 2] -= w2;
    }
    if (++x->loose >= LOOSE_MAX)
        carry(x);
}

static int64_t sat_count(int64_t a, int64_t b)
{
    return a >= XSUM_INF_MAX - b ? XSUM_INF_MAX : a + b;
}

void xsum_merge(ccs_xsum *x, const ccs_xsum *y)
{
    ccs_xsum t = *y;
    carry(&t);
    carry(x);
    /* carried: limbs in [0, 2^32), the top one in (-2^32, 2^32) (see below),
     * so no sum overflows */
    for (int i = 0; i < XSUM_LIMBS; i++)
        x->limb[i] += t.limb[i];
    x->pinf = sat_count(x->pinf, t.pinf);
    x->ninf = sat_count(x->ninf, t.ninf);
    carry(x); /* the top limb saturates there */
}

double xsum_value(const ccs_xsum *x)
{
    if (x->pinf && x->ninf)
        return NAN;
    if (x->pinf || x->ninf)
        return x->pinf ? INFINITY : -INFINITY;
    ccs_xsum t = *x;
    carry(&t);
    int neg = t.limb[XSUM_LIMBS - 1] < 0;
    if (neg) { /* the magnitude: negate every limb and carry again */
        for (int i = 0; i < XSUM_LIMBS; i++)
            t.limb[i] = -t.limb[i];
        carry(&t);
    }
    /* the top limb weighs 2^1070: beyond any double */
    if (t.limb[XSUM_LIMBS - 1])
        return neg ? -INFINITY : INFINITY;
    int top = XSUM_LIMBS - 2;
    while (top >= 0 && !t.limb[top])
        top--;
    if (top < 0)
        return 0;
    uint64_t w2 = (uint64_t)t.limb[top], w1 = top >= 1 ? (uint64_t)t.limb[top - 1] : 0,
             w0 = top >= 2 ? (uint64_t)t.limb[top - 2] : 0;
    int lz = 0;
    while (!(w2 & (UINT64_C(1) << (LIMB_BITS - 1 - lz))))
        lz++;
    /* the 64 bits from the leading one down, and whether any bit below is set */
    uint64_t hi = (((w2 << LIMB_BITS) | w1) << lz) | (w0 >> (LIMB_BITS - lz));
    int sticky = ((w0 << lz) & LIMB_MASK) != 0;
    for (int i = top - 3; i >= 0 && !sticky; i--)
        sticky = t.limb[i] != 0;
    /* to 53 bits, ties to even */
    uint64_t mant = hi >> 11, rest = hi & 0x7ff;
    if (rest > 0x400 || (rest == 0x400 && (sticky || (mant & 1))))
        mant++;
    int lead = LIMB_BITS * top + (LIMB_BITS - 1 - lz); /* bit of the leading one */
    double v = ldexp((double)mant, lead - 52 + UNIT_EXP);
    return neg ? -v : v;
}

/* Layout: format 1, first limb, limb count, 0; +inf and -inf counts; the
 * limbs from the first to the last non-zero one after carrying (which makes
 * the limbs of a value unique), 8 bytes each, little-endian. */
size_t xsum_encode(const ccs_xsum *x, unsigned char *buf)
{
    ccs_xsum t = *x;
    carry(&t);
    int lo = 0, hi = XSUM_LIMBS - 1;
    while (lo < XSUM_LIMBS && !t.limb[lo])
        lo++;
    while (hi >= lo && !t.limb[hi])
        hi--;
    int n = lo < XSUM_LIMBS ? hi - lo + 1 : 0;
    if (!n)
        lo = 0;
    buf[0] = 1;
    buf[1] = (unsigned char)lo;
    buf[2] = (unsigned char)n;
    buf[3] = 0;
    ccs_put_le64(buf + 4, (uint64_t)t.pinf);
    ccs_put_le64(buf + 12, (uint64_t)t.ninf);
    for (int i = 0; i < n; i++)
        ccs_put_le64(buf + ENC_HEAD + 8 * i, (uint64_t)t.limb[lo + i]);
    return ENC_HEAD + 8 * (size_t)n;
}

size_t xsum_decode(ccs_xsum *x, const unsigned char *buf, size_t n)
{
    xsum_zero(x);
    if (n < ENC_HEAD || buf[0] != 1 || buf[3] != 0)
        return 0;
    int lo = buf[1], k = buf[2];
    size_t len = ENC_HEAD + 8 * (size_t)k;
    if (lo + k > XSUM_LIMBS || n < len)
        return 0;
    uint64_t pinf = ccs_get_le64(buf + 4), ninf = ccs_get_le64(buf + 12);
    if (pinf > (uint64_t)XSUM_INF_MAX || ninf > (uint64_t)XSUM_INF_MAX)
        return 0;
    /* canonical, as xsum_encode writes: no limbs from 0, else non-zero ends */
    if (k == 0
            ? lo != 0
            : !ccs_get_le64(buf + ENC_HEAD) || !ccs_get_le64(buf + ENC_HEAD + 8 * (size_t)(k - 1)))
        return 0;
    for (int i = 0; i < k; i++) {
        int64_t v = (int64_t)ccs_get_le64(buf + ENC_HEAD + 8 * i);
        /* carried limbs are in [0, 2^32), the top one within a sum of 2^63 doubles */
        if (lo + i < XSUM_LIMBS - 1 ? v < 0 || v >= LIMB_BASE : v <= -LIMB_BASE || v >= LIMB_BASE) {
            xsum_zero(x);
            return 0;
        }
        x->limb[lo + i] = v;
    }
    x->pinf = (int64_t)pinf;
    x->ninf = (int64_t)ninf;
    return len;
}
