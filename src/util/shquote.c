/* shquote.c - POSIX shell quoting of one word (shquote.h). */
#include "ccsweep/util/shquote.h"

#include <string.h>

static int plain(const char *w)
{
    if (!*w)
        return 0;
    for (; *w; w++) {
        unsigned char c = (unsigned char)*w;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              strchr("_-./:=@%+,", c)))
            return 0;
    }
    return 1;
}

char *ccs_shquote(char *out, size_t n, const char *word)
{
    if (n == 0)
        return out;
    if (plain(word)) {
        size_t k = strlen(word);
        if (k < n) {
            memcpy(out, word, k + 1);
            return out;
        }
    }
    /* '...' with each ' as '\'' (close, escaped quote, reopen); room is kept
     * for the closing quote and the NUL */
    size_t o = 0;
    if (n < 3) {
        out[0] = '\0';
        return out;
    }
    out[o++] = '\'';
    for (const char *p = word; *p; p++) {
        if (*p == '\'') {
            if (o + 4 + 2 > n)
                break;
            memcpy(out + o, "'\\''", 4);
            o += 4;
        } else {
            if (o + 1 + 2 > n)
                break;
            out[o++] = *p;
        }
    }
    out[o++] = '\'';
    out[o] = '\0';
    return out;
}
