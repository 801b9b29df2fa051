/* report_gp.c - the report's side of gnuplot: finding the program, the head
 * every figure script starts with, quoting text into scripts, and running a
 * script once per figure format (png, pdf, svg) in a child process. */
#include "report_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* Path of program name into out (size n): name itself when it holds a '/',
 * else the first executable name in a directory of $PATH. Returns 0, or -1
 * when there is none (or it does not fit). */
static int find_program(const char *name, char *out, size_t n)
{
    if (strchr(name, '/')) {
        if (access(name, X_OK) != 0)
            return -1;
        return ccs_strlcpy(out, name, n);
    }
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t len = colon ? (size_t)(colon - path) : strlen(path);
        if ((int)snprintf(out, n, "%.*s/%s", (int)len, len ? path : ".", name) < (int)n &&
            access(out, X_OK) == 0)
            return 0;
        path += len + (colon ? 1 : 0);
    }
    return -1;
}

int rp_find_gnuplot(rp *r)
{
    const char *g = r->o->gnuplot;
    if (!g || !*g)
        g = getenv("CCSWEEP_GNUPLOT");
    if (!g || !*g)
        g = "gnuplot";
    if (find_program(g, r->gnuplot, sizeof r->gnuplot))
        return rp_fail(r, CCS_ERUNTIME,
                       "gnuplot not found (looked for '%s'%s); install it with "
                       "'make deps' (Debian package gnuplot-nox) or point CCSWEEP_GNUPLOT at it",
                       g, strchr(g, '/') ? "" : " on PATH");
    return CCS_OK;
}

/* 1 when the figure at path ends as a whole file of its format ends: a PNG
 * with its IEND chunk (length 0, type, CRC; PNG spec, ISO/IEC 15948 5.6 and
 * 11.2.5), a PDF with its %%EOF marker, an SVG with its closing tag. gnuplot's
 * cairo terminals exit 0 when the disk fills under them, leaving a cut file. */
static int figure_complete(const char *path, const char *fmt)
{
    static const unsigned char iend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82};
    unsigned char tail[64];
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    if (fseek(f, -(long)sizeof tail, SEEK_END) != 0)
        rewind(f); /* a file shorter than the tail */
    size_t n = fread(tail, 1, sizeof tail, f);
    fclose(f);
    if (!strcmp(fmt, "png"))
        return n >= sizeof iend && !memcmp(tail + n - sizeof iend, iend, sizeof iend);
    while (n > 0 && (tail[n - 1] == '\n' || tail[n - 1] == '\r' || tail[n - 1] == ' '))
        n--;
    const char *end = !strcmp(fmt, "pdf") ? "%%EOF" : "</svg>";
    size_t k = strlen(end);
    return n >= k && !memcmp(tail + n - k, end, k);
}

/* Run gnuplot once on data/NAME.gp with fmt='FMT' (a child process in the data
 * directory, its output to data/NAME.log). Fails (CCS_ERUNTIME, with the log's
 * first line) when it exits non-zero or leaves no non-empty DIR/NAME.FMT, and
 * (CCS_EIO, the cut file removed) when the file it leaves is not whole. */
static int run_gnuplot_fmt(rp *r, const char *name, const char *fmt)
{
    char script[128], logf[PATH_MAX + 16], png[PATH_MAX + 16], var[32];
    snprintf(script, sizeof script, "%s.gp", name);
    snprintf(logf, sizeof logf, "%s/%s.log", r->data, name);
    snprintf(png, sizeof png, "%s/%s.%s", r->dir, name, fmt);
    snprintf(var, sizeof var, "fmt='%s'", fmt);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return rp_fail(r, CCS_ERUNTIME, "cannot start gnuplot: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(logf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        if (chdir(r->data) == 0)
            execl(r->gnuplot, r->gnuplot, "-e", var, script, (char *)NULL);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return rp_fail(r, CCS_ERUNTIME, "waiting for gnuplot: %s", strerror(errno));
    struct stat sb;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || stat(png, &sb) != 0 || sb.st_size == 0) {
        char first[200] = "";
        FILE *f = fopen(logf, "r");
        if (f) {
            while (fgets(first, sizeof first, f) && first[0] == '\n')
                ;
            fclose(f);
            first[strcspn(first, "\n")] = 0;
        }
        return rp_fail(r, CCS_ERUNTIME, "gnuplot (%s) failed on %s/%s (exit %d): %s", r->gnuplot,
                       r->data, script, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                       first[0] ? first : "no figure written");
    }
    if (!figure_complete(png, fmt)) {
        long size = (long)sb.st_size;
        remove(png);
        return rp_fail(r, CCS_EIO,
                       "%s: gnuplot wrote a truncated figure (%ld bytes, its end missing; is the "
                       "disk full?): removed",
                       png, size);
    }
    if (r->log)
        fprintf(r->log, "  %s\n", png);
    return CCS_OK;
}

int rp_gnuplot(rp *r, const char *name)
{
    static const char *const ext[] = {"png", "pdf", "svg"};
    unsigned formats = r->o->formats ? r->o->formats : REPORT_PNG;
    int rc = CCS_OK;
    for (int k = 0; rc == CCS_OK && k < 3; k++)
        if (formats & (1u << k))
            rc = run_gnuplot_fmt(r, name, ext[k]);
    return rc;
}

int report_parse_formats(const char *s, unsigned *out, const char **bad)
{
    static const char *const names[] = {"png", "pdf", "svg"};
    *out = 0;
    *bad = s;
    if (!s || !*s)
        return -1;
    for (const char *p = s;;) {
        size_t len = strcspn(p, ",");
        int k = 0;
        while (k < 3 && !(strlen(names[k]) == len && !strncmp(p, names[k], len)))
            k++;
        if (k == 3) {
            *bad = p;
            return -1;
        }
        *out |= 1u << k;
        if (!p[len])
            return 0;
        p += len + 1;
    }
}

/* The terminal and common settings of every figure. The script draws in the
 * format of the gnuplot variable fmt (png, pdf or svg; rp_gnuplot sets it with
 * -e), same layout in each: PDF at 96 px per inch, fonts in points. */
void rp_gp_head(FILE *g, const char *png, int w, int h, const char *title, int rows, int cols)
{
    char q[512];
    int stem = (int)strcspn(png, ".");
    report_gp_quote(q, sizeof q, title);
    fprintf(g, "# written by ccsweep report; rerun: cd data && gnuplot -e \"fmt='pdf'\" %.*s.gp\n",
            stem, png);
    fprintf(g,
            "if (!exists('fmt')) fmt = 'png'\n"
            "if (fmt eq 'pdf') {\n"
            "    set terminal pdfcairo size %.4g,%.4g noenhanced font 'sans,7.5'\n"
            "} else {\n"
            "    if (fmt eq 'svg') {\n"
            "        set terminal svg size %d,%d dynamic noenhanced font 'sans,10' background "
            "'#ffffff'\n"
            "    } else {\n"
            "        set terminal pngcairo size %d,%d noenhanced font 'sans,10'\n"
            "    }\n"
            "}\n",
            w / 96.0, h / 96.0, w, h, w, h);
    fprintf(g, "set output '../%.*s.'.fmt\n", stem, png);
    fprintf(g, "set datafile missing '?'\n");
    fprintf(g, "set grid lc rgb '#dddddd'\n");
    fprintf(g, "set key top left font ',9' opaque box lc rgb '#bbbbbb'\n");
    fprintf(g, "set multiplot layout %d,%d title %s font ',13'\n", rows, cols, q);
}

void rp_gp_empty(FILE *g, const char *why, const char *restore)
{
    char q[256];
    report_gp_quote(q, sizeof q, why);
    fprintf(g,
            "set label 99 %s at graph 0.5, graph 0.5 center font ',11'\n"
            "unset key\nunset tics\nset xrange [0:1]\nset yrange [0:1]\nunset logscale\n"
            "plot 2 notitle\nunset label 99\nset key\nset tics\n",
            q);
    fprintf(g, "set xrange [*:*]\nset yrange [*:*]\n%s", restore);
}

/* The rows of a key at font points, from the columns that fit (see
 * report_key_fit). Measured on pngcairo (gnuplot 5.4, samplen 3, Left
 * reverse): a column is (longest + 6) x 0.875 x the font's points in pixels
 * (7 px per character at 8 points, 6 at 7), and the box starts 8 px into the
 * plot; 0.9 and 12 px leave a margin. The svg terminal sizes columns
 * narrower, pdfcairo as pngcairo. */
static int key_rows(int entries, size_t longest, int plot_w, int font)
{
    double col = ((double)longest + 6) * 0.9 * font;
    int fit = (int)((plot_w - 12) / col);
    int cols = (entries + 5) / 6; /* six rows, then another column */
    if (cols > fit)
        cols = fit;
    if (cols < 1)
        cols = 1;
    return (entries + cols - 1) / cols;
}

void report_key_fit(int entries, size_t longest, int plot_w, report_key *out)
{
    if (entries < 1)
        entries = 1;
    int r8 = key_rows(entries, longest, plot_w, 8), r7 = key_rows(entries, longest, plot_w, 7);
    out->font = r8 > 6 && r7 < r8 ? 7 : 8;
    out->rows = out->font == 7 ? r7 : r8;
}

int report_gp_quote(char *buf, size_t n, const char *s)
{
    size_t k = 0;
    if (n < 3)
        return -1;
    buf[k++] = '\'';
    for (; *s; s++) {
        size_t need = *s == '\'' ? 2 : 1;
        if (k + need + 2 > n) {
            strcpy(buf, "''");
            return -1;
        }
        /* a line break would end the string and the command: what follows
         * would run as gnuplot commands (system(...)); control characters and
         * backquotes (command substitution) become '?' */
        unsigned char c = (unsigned char)*s;
        buf[k++] = c < 0x20 || c == 0x7f || c == '`' ? '?' : *s;
        if (*s == '\'')
            buf[k++] = '\'';
    }
    buf[k++] = '\'';
    buf[k] = 0;
    return 0;
}
