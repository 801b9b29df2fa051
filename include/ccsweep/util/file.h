/* file.h - the one reader of input files (specs, catalogs, calibration
 * profiles, Hugging Face configs): whole regular files up to a stated size,
 * refused otherwise before anything is read, so that a FIFO, a device or a
 * directory given as an input is an error at once instead of a read that
 * blocks forever. */
#ifndef CCSWEEP_FILE_H
#define CCSWEEP_FILE_H

#include "ccsweep/util/common.h"

/* Size limits of the input files (stated in sweeps/README.md). */
#define CCS_MAX_YAML_BYTES ((size_t)16 << 20)     /* specs and catalog files: 16 MiB */
#define CCS_MAX_PROFILE_BYTES ((size_t)256 << 20) /* calibration profiles: 256 MiB */
/* Hugging Face config.json files: 1 MiB, some hundred times a real one (a few
 * KiB), and bounded so because jansson's tree takes about 15 times the text */
#define CCS_MAX_HFCONFIG_BYTES ((size_t)1 << 20)

/* Read the regular file at path, at most max bytes, into a new buffer with a
 * NUL after its *len bytes; the caller frees *text. Returns CCS_OK, or
 * CCS_EINPUT with err "path: cannot open: ...", "path: not a regular file",
 * "path: larger than N MiB (the limit for WHAT)" or "path: read error: ...",
 * or CCS_ENOMEM. what names the kind of file in the size message. */
int ccs_read_file(const char *path, size_t max, const char *what, char **text, size_t *len,
                  ccs_err *err);

#endif
