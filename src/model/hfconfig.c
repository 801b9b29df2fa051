/* hfconfig.c - Hugging Face config.json to ccs_model (hfconfig.h). The keys
 * are those of the transformers configuration classes (LlamaConfig,
 * MistralConfig, Qwen2Config, MixtralConfig, DeepseekV3Config, GPT2Config,
 * GPTNeoXConfig). */
#include "ccsweep/model/hfconfig.h"
#include "ccsweep/util/file.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Integer key k of o into *v, at least min (a size 1, a count that may be
 * none 0): absent or null, *v = dflt, or an error when dflt < 0. A value
 * out of range is an error naming the key, never taken as the default. */
static int get_int(const json_t *o, const char *path, const char *k, long dflt, long min,
                   int32_t *v, ccs_err *err)
{
    const json_t *x = json_object_get(o, k);
    if (!x || json_is_null(x)) {
        if (dflt < 0) {
            ccs_err_set(err, "%s: %s: missing", path, k);
            return CCS_EINPUT;
        }
        *v = (int32_t)dflt;
        return CCS_OK;
    }
    const char *want = min > 0 ? "a positive integer" : "a nonnegative integer";
    if (!json_is_integer(x)) {
        ccs_err_set(err, "%s: %s: expected %s", path, k, want);
        return CCS_EINPUT;
    }
    json_int_t n = json_integer_value(x);
    if (n < min || n > INT32_MAX) {
        ccs_err_set(err, "%s: %s: expected %s (got %lld)", path, k, want, (long long)n);
        return CCS_EINPUT;
    }
    *v = (int32_t)n;
    return CCS_OK;
}

/* Boolean key k of o into *v: absent or null, dflt (a 1 is no boolean here:
 * Python would take it as true, the default may be false). */
static int get_bool(const json_t *o, const char *path, const char *k, int dflt, int8_t *v,
                    ccs_err *err)
{
    const json_t *x = json_object_get(o, k);
    if (x && !json_is_null(x) && !json_is_boolean(x)) {
        ccs_err_set(err, "%s: %s: expected true or false", path, k);
        return CCS_EINPUT;
    }
    *v = (int8_t)(x && json_is_boolean(x) ? json_is_true(x) : dflt);
    return CCS_OK;
}

enum { ARCH_LLAMA, ARCH_MIXTRAL, ARCH_DEEPSEEK_V3, ARCH_GPT2, ARCH_NEOX };

static int arch_of(const char *type)
{
    static const struct {
        const char *type;
        int arch;
    } t[] = {{"llama", ARCH_LLAMA},     {"mistral", ARCH_LLAMA},           {"qwen2", ARCH_LLAMA},
             {"mixtral", ARCH_MIXTRAL}, {"deepseek_v3", ARCH_DEEPSEEK_V3}, {"gpt2", ARCH_GPT2},
             {"gpt_neox", ARCH_NEOX}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(type, t[i].type))
            return t[i].arch;
    return -1;
}

/* The keys of one architecture into m. */
static int read_arch(const json_t *o, const char *path, int arch, ccs_model *m, ccs_err *err)
{
    int rc = CCS_OK;
#define B(KEY, DFLT, F)                                                                            \
    do {                                                                                           \
        if (rc == CCS_OK)                                                                          \
            rc = get_bool(o, path, KEY, DFLT, &m->F, err);                                         \
    } while (0)
#define I(KEY, DFLT, MIN, F)                                                                       \
    do {                                                                                           \
        if (rc == CCS_OK)                                                                          \
            rc = get_int(o, path, KEY, DFLT, MIN, &m->F, err);                                     \
    } while (0)
    if (arch == ARCH_GPT2) {
        I("n_layer", -1, 1, layers);
        I("n_embd", -1, 1, hidden);
        I("n_head", -1, 1, heads);
        I("n_inner", 0, 1, ffn); /* null: 4 x hidden (model_fill_defaults) */
        I("vocab_size", -1, 1, vocab);
        I("n_positions", 1024, 1, max_pos);
        m->bias = 1;
        B("tie_word_embeddings", 1, tied);
        return rc;
    }
    I("num_hidden_layers", -1, 1, layers);
    I("hidden_size", -1, 1, hidden);
    I("num_attention_heads", -1, 1, heads);
    I("intermediate_size", -1, 1, ffn);
    I("vocab_size", -1, 1, vocab);
    m->max_pos = 0; /* rotary position embeddings */
    if (arch == ARCH_NEOX) {
        m->bias = 1;
        B("tie_word_embeddings", 0, tied);
        return rc;
    }
    I("num_key_value_heads", 0, 1, kv_heads); /* null: the query heads */
    /* the attention classes of Llama, Mistral, Qwen2 and Mixtral take it
     * (null: hidden / heads); DeepSeek-V3's is its rotary part, below */
    if (arch != ARCH_DEEPSEEK_V3)
        I("head_dim", 0, 1, head_dim);
    m->gated = 1;
    B("tie_word_embeddings", 0, tied);
    if (arch == ARCH_MIXTRAL) {
        I("num_local_experts", -1, 1, experts);
        I("num_experts_per_tok", -1, 1, top_k);
    } else if (arch == ARCH_DEEPSEEK_V3) {
        I("n_routed_experts", -1, 1, experts);
        I("num_experts_per_tok", -1, 1, top_k);
        I("n_shared_experts", 0, 0, shared_experts);
        I("moe_intermediate_size", -1, 1, moe_ffn);
        I("first_k_dense_replace", 0, 0, dense_layers);
        /* groups a token routes to: DeepSeek-V3's nodes (absent: no limit) */
        I("topk_group", 0, 1, route_nodes);
        I("q_lora_rank", 0, 1, q_lora_rank); /* null: queries projected directly */
        I("kv_lora_rank", -1, 1, kv_lora_rank);
        I("qk_nope_head_dim", -1, 1, qk_nope_dim);
        I("qk_rope_head_dim", -1, 0, qk_rope_dim);
        I("v_head_dim", -1, 1, v_head_dim);
        m->kv_heads = 0; /* latent attention: no kv heads of its own */
    }
#undef I
#undef B
    return rc;
}

static int name_char(char c)
{
    return c == '-' || c == '_' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           (c >= 'A' && c <= 'Z');
}

/* A catalog name from _name_or_path (a hub repository "org/model" or a local
 * directory): its last component, split at '/' and '\\', that is not "." or
 * ".." and keeps a character the catalog's names take; each run of other
 * characters becomes one '-', none at either end. A new string, "" when no
 * component has one, NULL when out of memory; it may be longer than a name. */
static char *name_of_path(const char *p)
{
    size_t n = strlen(p);
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    out[0] = '\0';
    for (size_t end = n; end > 0;) {
        size_t start = end;
        while (start > 0 && p[start - 1] != '/' && p[start - 1] != '\\')
            start--;
        size_t len = end - start, k = 0;
        int dots = (len == 1 && p[start] == '.') || (len == 2 && !strncmp(p + start, "..", 2));
        for (size_t i = start, gap = 0; !dots && i < end; i++) {
            if (!name_char(p[i])) {
                gap = 1;
                continue;
            }
            if (gap && k > 0)
                out[k++] = '-';
            gap = 0;
            out[k++] = p[i];
        }
        out[k] = '\0';
        if (k > 0)
            break;
        end = start > 0 ? start - 1 : 0;
    }
    return out;
}

int hfconfig_load(const char *path, const char *name, ccs_model *out, ccs_err *err)
{
    /* the bounded reader: a FIFO or directory is refused before any read */
    char *text;
    size_t len;
    int rc = ccs_read_file(path, CCS_MAX_HFCONFIG_BYTES, "Hugging Face configs", &text, &len, err);
    if (rc != CCS_OK)
        return rc;
    json_error_t je;
    json_t *o = json_loadb(text, len, 0, &je);
    free(text);
    if (!o) {
        ccs_err_set(err, "%s:%d: %s", path, je.line, je.text);
        return CCS_EINPUT;
    }
    const char *type = json_string_value(json_object_get(o, "model_type"));
    int arch = type ? arch_of(type) : -1;
    if (!json_is_object(o)) {
        ccs_err_set(err, "%s: expected a JSON object", path);
        rc = CCS_EINPUT;
    } else if (arch < 0) {
        ccs_err_set(err, "%s: model_type: %s%s%s (expected " HFCONFIG_TYPES ")", path,
                    type ? "'" : "missing", type ? type : "", type ? "' is not supported" : "");
        rc = CCS_EINPUT;
    }
    ccs_model m;
    memset(&m, 0, sizeof m);
    if (rc == CCS_OK)
        rc = read_arch(o, path, arch, &m, err);
    if (rc == CCS_OK && name && !ccs_name_ok(name)) {
        ccs_err_set(err,
                    "%s: name '%.*s' is no catalog name (1 to %d letters, digits, '-', '_', "
                    "'.')",
                    path, CCS_NAME_MAX, name, CCS_NAME_MAX - 1);
        rc = CCS_EINPUT;
    }
    char *own = NULL;
    if (rc == CCS_OK && !name) {
        const char *p = json_string_value(json_object_get(o, "_name_or_path"));
        own = p ? name_of_path(p) : NULL;
        if (p && !own) {
            ccs_err_set(err, "%s: out of memory", path);
            rc = CCS_ENOMEM;
        } else if (own && strlen(own) >= CCS_NAME_MAX) {
            ccs_err_set(err, "%s: _name_or_path: '%.200s' is longer than %d characters as a name",
                        path, own, CCS_NAME_MAX - 1);
            rc = CCS_EINPUT;
        }
    }
    if (rc == CCS_OK)
        ccs_strlcpy(m.name, name ? name : own && *own ? own : type, sizeof m.name);
    free(own);
    if (rc == CCS_OK) {
        model_fill_defaults(&m);
        ccs_err verr;
        if (model_validate(&m, &verr) != CCS_OK) {
            ccs_err_set(err, "%s: %s", path, verr.msg);
            rc = CCS_EINPUT;
        }
    }
    if (rc == CCS_OK)
        *out = m;
    json_decref(o);
    return rc;
}

/* ---- the catalog entry ------------------------------------------------------ */

/* Length of the UTF-8 sequence at s (1 to 4) when it encodes a character
 * YAML lets a stream hold (YAML 1.1, 5.1: printable; libyaml refuses the
 * rest and overlong forms), 0 otherwise. */
static int yaml_char_len(const unsigned char *s)
{
    int n = s[0] < 0x80             ? 1
            : (s[0] & 0xe0) == 0xc0 ? 2
            : (s[0] & 0xf0) == 0xe0 ? 3
            : (s[0] & 0xf8) == 0xf0 ? 4
                                    : 0;
    if (n == 0)
        return 0;
    uint32_t c = n == 1 ? s[0] : s[0] & (0x7fu >> n);
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (s[i] & 0x3fu);
    }
    static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    int ok = n == 1 ? c >= 0x20 && c < 0x7f
                    : c >= least[n] && (c == 0x85 || (c >= 0xa0 && c <= 0xd7ff) ||
                                        (c >= 0xe000 && c <= 0xfffd && c != 0xfeff) ||
                                        (c >= 0x10000 && c <= 0x10ffff));
    return ok ? n : 0;
}

/* The text of s inside a YAML double-quoted scalar (and fit for a comment):
 * quotes and backslashes escaped, control characters and bytes that are not
 * UTF-8 (a file name may hold any) as \xNN, which libyaml reads back as a
 * character and which never ends the line. */
static void yaml_chars(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int n = yaml_char_len(p);
        if (n == 0) {
            fprintf(f, "\\x%02x", *p++);
            continue;
        }
        if (*p == '"' || *p == '\\')
            fputc('\\', f);
        fwrite(p, 1, (size_t)n, f);
        p += n;
    }
}

void hfconfig_write_entry(FILE *f, const ccs_model *m, const char *path)
{
    fputs("# ccsweep catalog import ", f);
    yaml_chars(f, path);
    fprintf(f, ": %.2fB parameters\nmodels:\n  - name: \"", model_params(m) / 1e9);
    yaml_chars(f, m->name);
    fprintf(f,
            "\"\n    layers: %d\n    hidden: %d\n    heads: %d\n    kv_heads: %d\n    ffn: %d\n"
            "    vocab: %d\n    max_pos: %d\n    gated: %s\n    bias: %s\n    tied: %s\n",
            m->layers, m->hidden, m->heads, m->kv_heads, m->ffn, m->vocab, m->max_pos,
            m->gated ? "true" : "false", m->bias ? "true" : "false", m->tied ? "true" : "false");
    if (m->head_dim > 0)
        fprintf(f, "    head_dim: %d\n", m->head_dim);
    if (model_is_mla(m))
        fprintf(f,
                "    attention: mla\n    q_lora_rank: %d\n    kv_lora_rank: %d\n"
                "    qk_nope_dim: %d\n    qk_rope_dim: %d\n    v_head_dim: %d\n",
                m->q_lora_rank, m->kv_lora_rank, m->qk_nope_dim, m->qk_rope_dim, m->v_head_dim);
    if (m->experts > 0) {
        fprintf(f, "    experts: %d\n    top_k: %d\n    moe_ffn: %d\n", m->experts, m->top_k,
                m->moe_ffn);
        if (m->shared_experts)
            fprintf(f, "    shared_experts: %d\n", m->shared_experts);
        if (m->dense_layers)
            fprintf(f, "    dense_layers: %d\n", m->dense_layers);
        if (m->route_nodes)
            fprintf(f, "    route_nodes: %d\n", m->route_nodes);
    }
    fputs("    source: \"imported from ", f);
    yaml_chars(f, path);
    fputs(" by 'ccsweep catalog import'; seq and gbs not in the config\"\n", f);
}
