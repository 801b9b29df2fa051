/* shquote.h - words quoted for a POSIX shell, for the commands that messages
 * tell a user to paste (the resume hints). */
#ifndef CCSWEEP_SHQUOTE_H
#define CCSWEEP_SHQUOTE_H

#include <stddef.h>

/* Write word into out (n bytes) so that a POSIX shell reads it back as the one
 * word it is: unchanged when it is not empty and has only characters no shell
 * treats specially (letters, digits and _ - . / : = @ % + ,), otherwise in
 * single quotes with each ' written as '\''. Returns out. Size out as
 * 4 * strlen(word) + 3 bytes: a word that does not fit is cut short (still
 * closed, so still one word, but not the same word). */
char *ccs_shquote(char *out, size_t n, const char *word);

#endif
