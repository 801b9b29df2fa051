/* replay.c - run a fuzz harness's LLVMFuzzerTestOneInput over files (the seed
 * corpus and the regression inputs of earlier crashes) without libFuzzer, so
 * 'make check' (and 'make check SANITIZE=1') replays them with the normal
 * compiler. Arguments are files or directories of files. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t cap = 1 << 16, len = 0, got;
    uint8_t *buf = malloc(cap);
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb)
                free(buf);
            buf = nb;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "%s: out of memory\n", path);
        return -1;
    }
    /* an exact-size copy, so that ASan sees reads past the end */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

int main(int argc, char **argv)
{
    int n = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0)
            continue; /* an absent directory: nothing to replay */
        if (!S_ISDIR(sb.st_mode)) {
            bad |= run_file(argv[i]) != 0;
            n++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            bad |= run_file(path) != 0;
            n++;
        }
        if (d)
            closedir(d);
    }
    printf("replayed %d inputs\n", n);
    return bad;
}
