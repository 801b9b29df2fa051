/* xsum.h - exact sums of doubles: every finite double is an integer multiple
 * of 2^-1074 (the smallest subnormal), so a sum of them is an integer number
 * of those units, held here in fixed-point limbs without any rounding. Adding
 * is integer addition, associative and commutative: the same values added in
 * any order, or summed in parts that are then merged in any order, give the
 * same state and the same xsum_value bit for bit. Pure computation. */
#ifndef CCSWEEP_XSUM_H
#define CCSWEEP_XSUM_H

#include <stddef.h>
#include <stdint.h>

/* 32 bits per limb from 2^-1074 on: 2098 bits hold any finite double, 64
 * more any sum of up to 2^63 of them; the top limb carries the sign. */
#define XSUM_LIMBS 68
/* Infinities are counted up to this (2^62): xsum_add and xsum_merge
 * saturate there, xsum_decode refuses larger counts. The value only asks
 * whether any were added. */
#define XSUM_INF_MAX (INT64_C(1) << 62)
/* Bytes xsum_encode writes at most. */
#define XSUM_ENCODED_MAX (20 + 8 * XSUM_LIMBS)

typedef struct ccs_xsum {
    int64_t limb[XSUM_LIMBS]; /* limb i weighs 2^(32 i - 1074) */
    int64_t pinf, ninf;       /* +inf and -inf added */
    int32_t loose;            /* additions since the limbs were last carried */
} ccs_xsum;

/* The empty sum (zero). */
void xsum_zero(ccs_xsum *x);
/* Add v exactly; NaN is ignored (callers skip undefined values). */
void xsum_add(ccs_xsum *x, double v);
/* x += y, exactly (x may be y); a sum beyond 2^1102 in magnitude, reachable
 * only by merging, saturates there (its value is +-inf either way). */
void xsum_merge(ccs_xsum *x, const ccs_xsum *y);
/* The sum rounded to the nearest double (ties to even; a subnormal result
 * may be rounded twice), +-inf when infinities were added or the sum
 * overflows, NaN when both +inf and -inf were. */
double xsum_value(const ccs_xsum *x);
/* Write x in a canonical form (equal sums, equal bytes) to buf, which holds
 * XSUM_ENCODED_MAX bytes; returns the bytes written. */
size_t xsum_encode(const ccs_xsum *x, unsigned char *buf);
/* Read an encoding xsum_encode wrote at the start of buf[0..n) into x:
 * returns the bytes it takes, or 0 when there is none (x is then zero):
 * bytes xsum_encode would not write (a count over XSUM_INF_MAX, a limb out of
 * range, zero limbs at either end) are refused, so that whatever it accepts
 * encodes back to the same bytes. */
size_t xsum_decode(ccs_xsum *x, const unsigned char *buf, size_t n);

#endif
