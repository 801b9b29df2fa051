/* file.c - whole-file reads of regular files within a size limit (file.h). */
#include "ccsweep/util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int too_large(const char *path, size_t max, const char *what, ccs_err *err)
{
    ccs_err_set(err, "%s: larger than %zu MiB (the limit for %s)", path, max >> 20, what);
    return CCS_EINPUT;
}

int ccs_read_file(const char *path, size_t max, const char *what, char **text, size_t *len,
                  ccs_err *err)
{
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer; the
     * flag is cleared once fstat has shown a regular file */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        ccs_err_set(err, "%s: cannot open: %s", path, strerror(errno));
        return CCS_EINPUT;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        ccs_err_set(err, "%s: not a regular file", path);
        close(fd);
        return CCS_EINPUT;
    }
    if ((uintmax_t)sb.st_size > max) {
        close(fd);
        return too_large(path, max, what, err);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    /* the size from fstat, plus one byte to see a file that grew past max */
    size_t cap = (size_t)sb.st_size + 1, n = 0;
    char *buf = malloc(cap + 1);
    int rc = buf ? CCS_OK : CCS_ENOMEM;
    while (rc == CCS_OK) {
        if (n == cap) {
            if (cap > max) {
                rc = too_large(path, max, what, err);
                break;
            }
            size_t nc = cap * 2 > max + 1 ? max + 1 : cap * 2;
            char *nb = realloc(buf, nc + 1);
            if (!nb) {
                rc = CCS_ENOMEM;
                break;
            }
            buf = nb;
            cap = nc;
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            ccs_err_set(err, "%s: read error: %s", path, strerror(errno));
            rc = CCS_EINPUT;
        } else if (got == 0) {
            break;
        } else {
            n += (size_t)got;
        }
    }
    close(fd);
    if (rc == CCS_OK && n > max)
        rc = too_large(path, max, what, err);
    if (rc == CCS_ENOMEM)
        ccs_err_set(err, "%s: out of memory", path);
    if (rc != CCS_OK) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return CCS_OK;
}
