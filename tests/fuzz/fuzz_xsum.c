/* fuzz_xsum.c - exact sums (util/xsum.h): the input is read as a run of
 * encodings, with 8 bytes taken as a double wherever no encoding starts.
 * Each accepted encoding must re-encode to its own bytes; it is merged into
 * an accumulator, which is also merged with itself (counts and limbs grow
 * toward their bounds), and the accumulator's encoding must decode again to
 * the same bytes and the same value. */
#include "ccsweep/util/xsum.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_value(double a, double b)
{
    if (!(a == b || (isnan(a) && isnan(b))))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ccs_xsum acc, x;
    unsigned char buf[XSUM_ENCODED_MAX], again[XSUM_ENCODED_MAX];
    xsum_zero(&acc);
    for (size_t at = 0; at < size;) {
        size_t n = xsum_decode(&x, data + at, size - at);
        if (!n) {
            double v;
            if (size - at < sizeof v)
                break;
            memcpy(&v, data + at, sizeof v);
            xsum_add(&acc, v);
            at += sizeof v;
            continue;
        }
        if (xsum_encode(&x, buf) != n || memcmp(buf, data + at, n))
            abort(); /* decode accepted bytes encode would not write */
        xsum_merge(&acc, &x);
        xsum_merge(&acc, &acc);
        at += n;
    }
    size_t n = xsum_encode(&acc, buf);
    ccs_xsum y;
    if (xsum_decode(&y, buf, n) != n || xsum_encode(&y, again) != n || memcmp(buf, again, n))
        abort(); /* encode wrote bytes decode refuses, or not canonically */
    same_value(xsum_value(&acc), xsum_value(&y));
    return 0;
}
