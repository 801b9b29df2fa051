/* fuzz_expr.c - the where-filter language: compile any text; when it
 * compiles, evaluate it on field values taken from the input's bytes. */
#include "fuzz_common.h"
#include "ccsweep/sweep/expr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    ccs_err err;
    int col = 0;
    ccs_expr *e = expr_compile(text, &err, &col);
    if (e) {
        double vals[EXPR_F_N];
        for (int i = 0; i < EXPR_F_N; i++) /* small integers, zero included */
            vals[i] = size ? (double)(data[(size_t)i % size] % 7) : 0;
        int r = expr_eval(e, vals);
        if (r != 0 && r != 1 && r != EXPR_UNDEFINED)
            abort();
        expr_free(e);
    } else if (col < 1 || (size_t)col > size + 1 || !err.msg[0]) {
        abort(); /* an error must point into the text */
    }
    free(text);
    return 0;
}
