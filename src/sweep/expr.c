/* expr.c - the `where` language: a recursive-descent parser that type-checks
 * while it emits postfix bytecode, and a stack evaluator over doubles. */
#include "ccsweep/sweep/expr.h"
#include "ccsweep/model/plan.h"

#include <assert.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPR_MAX_CODE 256
#define EXPR_MAX_STACK 32
/* Nesting of parentheses, 'not' and unary signs: the parser recurses once
 * per level, so this bounds its stack use whatever the input. */
#define EXPR_MAX_NEST 64

enum {
    OP_CONST,
    OP_LOAD,
    OP_NEG,
    OP_NOT,
    OP_ADD,
    OP_SUB,
    OP_MUL,
    OP_DIV,
    OP_MOD,
    OP_LT,
    OP_LE,
    OP_GT,
    OP_GE,
    OP_EQ,
    OP_NE,
    OP_AND,
    OP_OR
};

typedef struct insn {
    uint8_t op;
    int16_t field; /* OP_LOAD */
    double k;      /* OP_CONST */
} insn;

struct ccs_expr {
    int n;
    int uses_results;
    insn code[EXPR_MAX_CODE];
};

/* Static types of sub-expressions. Enums compare only with their own kind.
 * T_NAME is a mode name that more than one enum has ('none': a recompute mode
 * and a dp_overlap mode); a comparison gives it the other side's kind. */
enum { T_NUM, T_BOOL, T_RECOMP, T_DTYPE, T_CPCOMM, T_DPOV, T_NAME };
static const char *const type_names[] = {"a number",   "a boolean",      "a recompute mode",
                                         "a dtype",    "a cp_comm mode", "a dp_overlap mode",
                                         "a mode name"};

static const struct {
    const char *name;
    int type;
} fields[EXPR_F_N] = {
    [EXPR_F_DEVICES] = {"devices", T_NUM},
    [EXPR_F_TP] = {"tp", T_NUM},
    [EXPR_F_PP] = {"pp", T_NUM},
    [EXPR_F_DP] = {"dp", T_NUM},
    [EXPR_F_VPP] = {"vpp", T_NUM},
    [EXPR_F_MBS] = {"mbs", T_NUM},
    [EXPR_F_GBS] = {"gbs", T_NUM},
    [EXPR_F_SEQ] = {"seq", T_NUM},
    [EXPR_F_DTYPE] = {"dtype", T_DTYPE},
    [EXPR_F_SP] = {"sp", T_BOOL},
    [EXPR_F_ZERO] = {"zero", T_NUM},
    [EXPR_F_RECOMPUTE] = {"recompute", T_RECOMP},
    [EXPR_F_FLASH_ATTN] = {"flash_attn", T_BOOL},
    [EXPR_F_TP_OVERLAP] = {"tp_overlap", T_BOOL},
    [EXPR_F_DP_OVERLAP] = {"dp_overlap", T_DPOV},
    [EXPR_F_INNET_REDUCE] = {"innet_reduce", T_BOOL},
    [EXPR_F_COMM_COMPRESS] = {"comm_compress", T_NUM},
    [EXPR_F_NET_BW_FACTOR] = {"net_bw_factor", T_NUM},
    [EXPR_F_CP] = {"cp", T_NUM},
    [EXPR_F_CP_COMM] = {"cp_comm", T_CPCOMM},
    [EXPR_F_EP] = {"ep", T_NUM},
    [EXPR_F_CAPACITY_FACTOR] = {"capacity_factor", T_NUM},
    [EXPR_F_PP_FIRST_LAYERS] = {"pp_first_layers", T_NUM},
    [EXPR_F_PP_LAST_LAYERS] = {"pp_last_layers", T_NUM},
    [EXPR_F_LAYERS] = {"layers", T_NUM},
    [EXPR_F_HIDDEN] = {"hidden", T_NUM},
    [EXPR_F_HEADS] = {"heads", T_NUM},
    [EXPR_F_KV_HEADS] = {"kv_heads", T_NUM},
    [EXPR_F_FFN] = {"ffn", T_NUM},
    [EXPR_F_VOCAB] = {"vocab", T_NUM},
    [EXPR_F_PARAMS] = {"params", T_NUM},
    [EXPR_F_EXPERTS] = {"experts", T_NUM},
    [EXPR_F_TOP_K] = {"top_k", T_NUM},
    [EXPR_F_GEN] = {"gen", T_NUM},
    [EXPR_F_MEM_CAP] = {"mem_cap", T_NUM},
    [EXPR_F_DEVICES_PER_NODE] = {"devices_per_node", T_NUM},
    [EXPR_F_FITS] = {"fits", T_BOOL},
    [EXPR_F_OK] = {"ok", T_BOOL},
    [EXPR_F_OOM] = {"oom", T_BOOL},
    [EXPR_F_INVALID] = {"invalid", T_BOOL},
    [EXPR_F_REASON] = {"reason", T_NUM},
    [EXPR_F_MICRO_BATCHES] = {"micro_batches", T_NUM},
    [EXPR_F_T_ITER] = {"t_iter", T_NUM},
    [EXPR_F_T_COMPUTE] = {"t_compute", T_NUM},
    [EXPR_F_T_COMM] = {"t_comm", T_NUM},
    [EXPR_F_T_COMM_EXPOSED] = {"t_comm_exposed", T_NUM},
    [EXPR_F_T_TP_COMM] = {"t_tp_comm", T_NUM},
    [EXPR_F_T_TP_COMM_EXPOSED] = {"t_tp_comm_exposed", T_NUM},
    [EXPR_F_T_DP_COMM] = {"t_dp_comm", T_NUM},
    [EXPR_F_T_DP_COMM_EXPOSED] = {"t_dp_comm_exposed", T_NUM},
    [EXPR_F_T_PP_COMM] = {"t_pp_comm", T_NUM},
    [EXPR_F_T_BUBBLE] = {"t_bubble", T_NUM},
    [EXPR_F_T_OPTIMIZER] = {"t_optimizer", T_NUM},
    [EXPR_F_COMM_FRACTION] = {"comm_fraction", T_NUM},
    [EXPR_F_HIDDEN_FRACTION] = {"hidden_fraction", T_NUM},
    [EXPR_F_MEM_TOTAL] = {"mem_total", T_NUM},
    [EXPR_F_MEM_WEIGHTS] = {"mem_weights", T_NUM},
    [EXPR_F_MEM_GRADS] = {"mem_grads", T_NUM},
    [EXPR_F_MEM_OPTIMIZER] = {"mem_optimizer", T_NUM},
    [EXPR_F_MEM_ACTIVATIONS] = {"mem_activations", T_NUM},
    [EXPR_F_MODEL_FLOPS] = {"model_flops", T_NUM},
    [EXPR_F_HW_FLOPS] = {"hw_flops", T_NUM},
    [EXPR_F_MFU] = {"mfu", T_NUM},
    [EXPR_F_TOKENS_PER_S] = {"tokens_per_s", T_NUM},
    [EXPR_F_TP_BYTES] = {"tp_bytes", T_NUM},
    [EXPR_F_DP_BYTES] = {"dp_bytes", T_NUM},
    [EXPR_F_PP_BYTES] = {"pp_bytes", T_NUM},
    [EXPR_F_CCR] = {"ccr", T_NUM},
    [EXPR_F_HFU] = {"hfu", T_NUM},
    [EXPR_F_T_CP_COMM] = {"t_cp_comm", T_NUM},
    [EXPR_F_T_CP_COMM_EXPOSED] = {"t_cp_comm_exposed", T_NUM},
    [EXPR_F_CP_BYTES] = {"cp_bytes", T_NUM},
    [EXPR_F_T_EP_COMM] = {"t_ep_comm", T_NUM},
    [EXPR_F_EP_BYTES] = {"ep_bytes", T_NUM},
};

int expr_field_lookup(const char *name)
{
    for (int i = 0; name && i < EXPR_F_N; i++)
        if (fields[i].name && strcmp(fields[i].name, name) == 0)
            return i;
    return -1;
}

const char *expr_field_name(int field)
{
    return (field >= 0 && field < EXPR_F_N) ? fields[field].name : "?";
}

/* ---- lexer ------------------------------------------------------------------ */

enum {
    TK_END,
    TK_NUM,
    TK_IDENT,
    TK_STR,
    TK_LP,
    TK_RP,
    TK_PLUS,
    TK_MINUS,
    TK_STAR,
    TK_SLASH,
    TK_PCT,
    TK_LT,
    TK_LE,
    TK_GT,
    TK_GE,
    TK_EQ,
    TK_NE,
    TK_AND,
    TK_OR,
    TK_NOT,
    TK_BAD
};

typedef struct parser {
    const char *text;
    size_t pos;
    int tk;        /* current token */
    size_t tstart; /* its offset */
    size_t tlen;
    double num;
    ccs_expr *e;
    int depth, max_depth;
    int nest; /* current recursion level of the parser */
    /* the last mode name parsed (its offset in text, its length, its OP_CONST):
     * where a comparison finds the name T_NAME stands for */
    size_t lit_at, lit_len;
    int lit_insn;
    int failed;
    int err_col;
    ccs_err *err;
} parser;

/* Bytes of the UTF-8 character at s: 1 for ASCII or a byte that starts no
 * well-formed sequence, so a message never quotes half a character. */
static size_t u8_len(const char *s)
{
    unsigned char c = (unsigned char)*s;
    size_t n = c >= 0xf0 && c < 0xf8 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    if (c >= 0xf8)
        return 1;
    for (size_t i = 1; i < n; i++)
        if (((unsigned char)s[i] & 0xc0) != 0x80)
            return 1;
    return n;
}

/* Up to n bytes of s into dst (size bytes, NUL-terminated), cut between
 * characters; "..." marks a cut. */
static void clip(char *dst, size_t size, const char *s, size_t n)
{
    size_t k = 0;
    while (k < n && s[k]) {
        size_t c = u8_len(s + k);
        if (k + c + 4 > size)
            break;
        k += c;
    }
    memcpy(dst, s, k);
    strcpy(dst + k, k < n && s[k] ? "..." : "");
}

static void perr(parser *p, size_t at, const char *fmt, const char *arg)
{
    if (p->failed)
        return;
    p->failed = 1;
    /* the column in characters, as an editor (and libyaml's marks) count */
    int col = 1;
    for (size_t i = 0; i < at && p->text[i]; i++)
        col += ((unsigned char)p->text[i] & 0xc0) != 0x80;
    p->err_col = col;
    char msg[300];
    snprintf(msg, sizeof msg, fmt, arg ? arg : "");
    ccs_err_set(p->err, "column %d: %s", p->err_col, msg);
}

static int word_is(const parser *p, const char *w)
{
    return p->tk == TK_IDENT && strlen(w) == p->tlen && !strncmp(p->text + p->tstart, w, p->tlen);
}

static void next(parser *p)
{
    const char *s = p->text;
    while (s[p->pos] == ' ' || s[p->pos] == '\t' || s[p->pos] == '\n' || s[p->pos] == '\r')
        p->pos++;
    p->tstart = p->pos;
    char c = s[p->pos];
    if (!c) {
        p->tk = TK_END;
        p->tlen = 0;
        return;
    }
    if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)s[p->pos + 1]))) {
        char *end;
        p->num = strtod(s + p->pos, &end);
        int hex = c == '0' && (s[p->pos + 1] == 'x' || s[p->pos + 1] == 'X');
        p->pos = (size_t)(end - s);
        p->tk = hex || isalpha((unsigned char)*end) || *end == '_' || !isfinite(p->num) ? TK_BAD
                                                                                        : TK_NUM;
        p->tlen = p->pos - p->tstart;
        if (hex)
            perr(p, p->tstart, "hexadecimal number: write numbers in decimal", NULL);
        else if (p->tk == TK_BAD && !isfinite(p->num))
            perr(p, p->tstart, "number out of range", NULL);
        else if (p->tk == TK_BAD)
            perr(p, p->tstart, "malformed number", NULL);
        return;
    }
    if (isalpha((unsigned char)c) || c == '_') {
        while (isalnum((unsigned char)s[p->pos]) || s[p->pos] == '_')
            p->pos++;
        p->tlen = p->pos - p->tstart;
        p->tk = TK_IDENT;
        if (word_is(p, "and"))
            p->tk = TK_AND;
        else if (word_is(p, "or"))
            p->tk = TK_OR;
        else if (word_is(p, "not"))
            p->tk = TK_NOT;
        return;
    }
    if (c == '\'' || c == '"') {
        size_t q = p->pos + 1;
        while (s[q] && s[q] != c)
            q++;
        if (!s[q]) {
            perr(p, p->tstart, "unterminated string", NULL);
            p->tk = TK_BAD;
            return;
        }
        p->tstart = p->pos + 1;
        p->tlen = q - p->pos - 1;
        p->pos = q + 1;
        p->tk = TK_STR;
        return;
    }
    static const struct {
        const char *s;
        int tk;
    } ops[] = {{"<=", TK_LE},  {">=", TK_GE},   {"==", TK_EQ},  {"!=", TK_NE},
               {"&&", TK_AND}, {"||", TK_OR},   {"<", TK_LT},   {">", TK_GT},
               {"(", TK_LP},   {")", TK_RP},    {"+", TK_PLUS}, {"-", TK_MINUS},
               {"*", TK_STAR}, {"/", TK_SLASH}, {"%", TK_PCT},  {"!", TK_NOT}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        size_t n = strlen(ops[i].s);
        if (!strncmp(s + p->pos, ops[i].s, n)) {
            p->pos += n;
            p->tlen = n;
            p->tk = ops[i].tk;
            return;
        }
    }
    p->tk = TK_BAD;
    p->tlen = 1;
    if (c == '=')
        perr(p, p->tstart, "'=' is not an operator; compare with '=='", NULL);
    else {
        char ch[8];
        p->tlen = u8_len(s + p->pos);
        clip(ch, sizeof ch, s + p->pos, p->tlen);
        if ((unsigned char)c >= 0x80 && p->tlen == 1) /* not UTF-8: its code */
            snprintf(ch, sizeof ch, "\\x%02x", (unsigned char)c);
        perr(p, p->tstart, "unexpected character '%s'", ch);
    }
}

/* ---- code emission ------------------------------------------------------------ */

static void emit(parser *p, int op, int field, double k, size_t at)
{
    if (p->failed)
        return;
    if (p->e->n >= EXPR_MAX_CODE) {
        perr(p, at, "expression too long", NULL);
        return;
    }
    insn *in = &p->e->code[p->e->n++];
    in->op = (uint8_t)op;
    in->field = (int16_t)field;
    in->k = k;
    if (op == OP_CONST || op == OP_LOAD)
        p->depth++;
    else if (op != OP_NEG && op != OP_NOT)
        p->depth--;
    if (p->depth > p->max_depth)
        p->max_depth = p->depth;
    if (p->depth > EXPR_MAX_STACK)
        perr(p, at, "expression nested too deeply", NULL);
}

static int parse_or(parser *p);

/* Enter one nesting level; 0 when the limit is reached (error set). */
static int enter(parser *p, size_t at)
{
    if (++p->nest > EXPR_MAX_NEST) {
        char lim[16];
        snprintf(lim, sizeof lim, "%d", EXPR_MAX_NEST);
        perr(p, at,
             "expression nested too deeply (at most %s levels of parentheses, 'not' "
             "and signs)",
             lim);
        return 0;
    }
    return 1;
}

/* The code of the name s (n bytes) as a mode of enum type t, or -1. */
static int enum_value(int t, const char *s, size_t n)
{
    char buf[24];
    if (n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    switch (t) {
    case T_RECOMP:
        return recompute_parse(buf);
    case T_DTYPE:
        return dtype_parse(buf);
    case T_CPCOMM:
        return cp_comm_parse(buf);
    case T_DPOV:
        return dp_overlap_parse(buf);
    default:
        return -1;
    }
}

/* The kind of a mode name: its enum type (with *v its code), T_NAME when
 * several enums have it (*v its code in the first), or -1 when none has. */
static int enum_const(const char *s, size_t n, double *v)
{
    int kind = -1;
    for (int t = T_RECOMP; t <= T_DPOV; t++) {
        int c = enum_value(t, s, n);
        if (c < 0)
            continue;
        if (kind < 0)
            *v = c;
        kind = kind < 0 ? t : T_NAME;
    }
    return kind;
}

/* The names of an enum type, for messages; "" for other types. */
static const char *enum_names(int t)
{
    switch (t) {
    case T_RECOMP:
        return " (recompute: none, selective, full)";
    case T_DTYPE:
        return " (dtype: fp32, tf32, bf16, fp16, fp8)";
    case T_CPCOMM:
        return " (cp_comm: ring, allgather)";
    case T_DPOV:
        return " (dp_overlap: none, 'last-microbatch', bucketed)";
    default:
        return "";
    }
}

static int type_error(parser *p, size_t at, const char *what, int got)
{
    char msg[200];
    snprintf(msg, sizeof msg, "%s, got %s%s", what, type_names[got], enum_names(got));
    perr(p, at, "type error: %s", msg);
    return T_BOOL;
}

static int parse_primary(parser *p)
{
    size_t at = p->tstart;
    if (p->failed)
        return T_BOOL;
    switch (p->tk) {
    case TK_NUM: {
        double v = p->num;
        next(p);
        emit(p, OP_CONST, 0, v, at);
        return T_NUM;
    }
    case TK_LP: {
        if (!enter(p, at))
            return T_BOOL;
        next(p);
        int t = parse_or(p);
        p->nest--;
        if (p->tk != TK_RP) {
            perr(p, p->tstart, "expected ')'", NULL);
            return t;
        }
        next(p);
        return t;
    }
    case TK_STR:
    case TK_IDENT: {
        char name[64];
        clip(name, sizeof name, p->text + p->tstart, p->tlen);
        size_t n = strlen(name);
        int is_str = p->tk == TK_STR;
        if (is_str)
            at--; /* point at the opening quote */
        next(p);
        double v = 0;
        if (!is_str && (!strcmp(name, "true") || !strcmp(name, "false"))) {
            emit(p, OP_CONST, 0, name[0] == 't', at);
            return T_BOOL;
        }
        int et = enum_const(name, n, &v);
        if (et >= 0) {
            p->lit_at = at + (size_t)is_str;
            p->lit_len = n;
            p->lit_insn = p->e->n;
            emit(p, OP_CONST, 0, v, at);
            return et;
        }
        if (is_str) {
            perr(p, at,
                 "unknown name '%s' (expected a recompute mode none, selective, full; a "
                 "dp_overlap mode none, 'last-microbatch', bucketed; a cp_comm mode ring, "
                 "allgather; or a dtype)",
                 name);
            return T_BOOL;
        }
        int f = expr_field_lookup(name);
        size_t w = at;
        while (isalnum((unsigned char)p->text[w]) || p->text[w] == '_' || p->text[w] == '-')
            w++;
        if (f < 0 && w - at > n && enum_const(p->text + at, w - at, &v) >= 0) {
            char word[64];
            snprintf(word, sizeof word, "'%.*s'", (int)(w - at), p->text + at);
            perr(p, at, "%s is a mode name with a '-' in it: quote it", word);
            return T_BOOL;
        }
        if (f < 0) {
            perr(p, at,
                 "unknown field '%s' (e.g. tp, pp, dp, devices, hidden, gen, fits, "
                 "t_iter, comm_fraction; see sweeps/README.md)",
                 name);
            return T_BOOL;
        }
        if (f >= EXPR_F_RESULT)
            p->e->uses_results = 1;
        emit(p, OP_LOAD, f, 0, at);
        return fields[f].type;
    }
    case TK_END:
        perr(p, at, "unexpected end of expression", NULL);
        return T_BOOL;
    default: {
        char tok[24];
        clip(tok, sizeof tok, p->text + p->tstart, p->tlen);
        perr(p, at, "expected a number, a field or '(', got '%s'", tok);
        return T_BOOL;
    }
    }
}

static int parse_unary(parser *p)
{
    if (p->tk == TK_MINUS || p->tk == TK_PLUS) {
        size_t at = p->tstart;
        int neg = p->tk == TK_MINUS;
        if (!enter(p, at))
            return T_BOOL;
        next(p);
        int t = parse_unary(p);
        p->nest--;
        if (p->failed)
            return T_BOOL;
        if (t != T_NUM)
            return type_error(p, at, "unary sign needs a number", t);
        if (neg)
            emit(p, OP_NEG, 0, 0, at);
        return T_NUM;
    }
    return parse_primary(p);
}

static double run(const insn *code, int n, const double *vals);

/* 1 when the code from 'from' on names no field and computes 0. */
static int constant_zero(const ccs_expr *e, int from)
{
    for (int i = from; i < e->n; i++)
        if (e->code[i].op == OP_LOAD)
            return 0;
    return e->n > from && run(e->code + from, e->n - from, NULL) == 0;
}

static int parse_mul(parser *p)
{
    int t = parse_unary(p);
    while (!p->failed && (p->tk == TK_STAR || p->tk == TK_SLASH || p->tk == TK_PCT)) {
        int tk = p->tk;
        size_t at = p->tstart;
        next(p);
        int from = p->e->n;
        int u = parse_unary(p);
        if (p->failed)
            return T_BOOL;
        if (t != T_NUM || u != T_NUM)
            return type_error(p, at, "arithmetic needs numbers", t != T_NUM ? t : u);
        if (tk != TK_STAR && constant_zero(p->e, from)) {
            perr(p, at, "division by zero: the divisor of '%s' is always 0",
                 tk == TK_SLASH ? "/" : "%");
            return T_NUM;
        }
        emit(p, tk == TK_STAR ? OP_MUL : tk == TK_SLASH ? OP_DIV : OP_MOD, 0, 0, at);
    }
    return t;
}

static int parse_add(parser *p)
{
    int t = parse_mul(p);
    while (!p->failed && (p->tk == TK_PLUS || p->tk == TK_MINUS)) {
        int tk = p->tk;
        size_t at = p->tstart;
        next(p);
        int u = parse_mul(p);
        if (t != T_NUM || u != T_NUM)
            return type_error(p, at, "arithmetic needs numbers", t != T_NUM ? t : u);
        emit(p, tk == TK_PLUS ? OP_ADD : OP_SUB, 0, 0, at);
    }
    return t;
}

static int is_cmp(int tk)
{
    return tk >= TK_LT && tk <= TK_NE;
}

/* Give the mode name T_NAME stands for (its OP_CONST at insn, its text at
 * at/len) the kind of the other side of its comparison, want. Returns that
 * kind, or T_NAME when the name is not one of want's. */
static int resolve_name(parser *p, int insn, size_t at, size_t len, int want)
{
    for (int k = T_RECOMP; want == T_NAME && k <= T_DPOV; k++)
        if (enum_value(k, p->text + at, len) >= 0)
            want = k; /* two names ('none == none'): the first kind both have */
    int c = enum_value(want, p->text + at, len);
    if (c < 0)
        return T_NAME;
    assert(p->e->code[insn].op == OP_CONST);
    p->e->code[insn].k = c;
    return want;
}

static int parse_cmp(parser *p)
{
    int t = parse_add(p);
    if (p->failed || !is_cmp(p->tk))
        return t;
    size_t l_at = p->lit_at, l_len = p->lit_len;
    int l_insn = p->lit_insn;
    int tk = p->tk;
    size_t at = p->tstart;
    next(p);
    int u = parse_add(p);
    if (p->failed)
        return T_BOOL;
    if (t == T_NAME)
        t = resolve_name(p, l_insn, l_at, l_len, u);
    if (u == T_NAME)
        u = resolve_name(p, p->lit_insn, p->lit_at, p->lit_len, t);
    if (t != u) {
        char msg[240];
        snprintf(msg, sizeof msg, "cannot compare %s with %s%s", type_names[t], type_names[u],
                 enum_names(t <= T_BOOL || t == T_NAME ? u : t));
        perr(p, at, "type error: %s", msg);
        return T_BOOL;
    }
    if (t == T_BOOL && tk != TK_EQ && tk != TK_NE)
        return type_error(p, at, "ordering needs numbers", t);
    static const int map[] = {[TK_LT] = OP_LT, [TK_LE] = OP_LE, [TK_GT] = OP_GT,
                              [TK_GE] = OP_GE, [TK_EQ] = OP_EQ, [TK_NE] = OP_NE};
    emit(p, map[tk], 0, 0, at);
    if (is_cmp(p->tk))
        perr(p, p->tstart, "comparisons cannot be chained; use 'and'", NULL);
    return T_BOOL;
}

static int parse_not(parser *p)
{
    if (p->tk == TK_NOT) {
        size_t at = p->tstart;
        if (!enter(p, at))
            return T_BOOL;
        next(p);
        int t = parse_not(p);
        p->nest--;
        if (p->failed)
            return T_BOOL;
        if (t != T_BOOL)
            return type_error(p, at, "'not' needs a boolean", t);
        emit(p, OP_NOT, 0, 0, at);
        return T_BOOL;
    }
    return parse_cmp(p);
}

static int parse_and(parser *p)
{
    int t = parse_not(p);
    while (!p->failed && p->tk == TK_AND) {
        size_t at = p->tstart;
        next(p);
        int u = parse_not(p);
        if (t != T_BOOL || u != T_BOOL)
            return type_error(p, at, "'and' needs booleans", t != T_BOOL ? t : u);
        emit(p, OP_AND, 0, 0, at);
    }
    return t;
}

static int parse_or(parser *p)
{
    int t = parse_and(p);
    while (!p->failed && p->tk == TK_OR) {
        size_t at = p->tstart;
        next(p);
        int u = parse_and(p);
        if (t != T_BOOL || u != T_BOOL)
            return type_error(p, at, "'or' needs booleans", t != T_BOOL ? t : u);
        emit(p, OP_OR, 0, 0, at);
    }
    return t;
}

ccs_expr *expr_compile(const char *text, ccs_err *err, int *err_col)
{
    ccs_expr *e = calloc(1, sizeof *e);
    if (!e) {
        ccs_err_set(err, "out of memory");
        if (err_col)
            *err_col = 1;
        return NULL;
    }
    parser p = {.text = text, .e = e, .err = err};
    next(&p);
    int t = p.failed ? T_BOOL : parse_or(&p);
    if (!p.failed && p.tk != TK_END) {
        char rest[64];
        clip(rest, sizeof rest, p.text + p.tstart, strlen(p.text + p.tstart));
        perr(&p, p.tstart, "unexpected '%s' after a complete expression", rest);
    }
    if (!p.failed && t != T_BOOL)
        type_error(&p, 0, "the filter must be a condition (true or false)", t);
    if (p.failed) {
        if (err_col)
            *err_col = p.err_col;
        free(e);
        return NULL;
    }
    return e;
}

void expr_free(ccs_expr *e)
{
    free(e);
}

int expr_uses_results(const ccs_expr *e)
{
    return e->uses_results;
}

/* Stack machine over doubles. An undefined value (a division or modulo by
 * zero) is NaN and spreads: arithmetic and comparisons on it are NaN, 'and'
 * with a false side is false and 'or' with a true side is true whatever the
 * other side, so a guarded division ("dp > 0 and tp / dp > 2") is defined. */
static double run(const insn *code, int n, const double *vals)
{
    double st[EXPR_MAX_STACK + 1];
    int sp = 0;
    for (int i = 0; i < n; i++) {
        const insn *in = &code[i];
        double b;
        switch (in->op) {
        case OP_CONST:
            st[sp++] = in->k;
            continue;
        case OP_LOAD:
            st[sp++] = vals[in->field];
            continue;
        case OP_NEG:
            st[sp - 1] = -st[sp - 1];
            continue;
        case OP_NOT:
            st[sp - 1] = isnan(st[sp - 1]) ? NAN : st[sp - 1] == 0;
            continue;
        default:
            break;
        }
        b = st[--sp];
        double *a = &st[sp - 1];
        int un = isnan(*a) || isnan(b);
        switch (in->op) {
        case OP_ADD:
            *a += b;
            break;
        case OP_SUB:
            *a -= b;
            break;
        case OP_MUL:
            *a *= b;
            break;
        case OP_DIV:
            *a = b == 0 ? NAN : *a / b;
            break;
        case OP_MOD:
            *a = b == 0 ? NAN : fmod(*a, b);
            break;
        case OP_LT:
            *a = un ? NAN : *a < b;
            break;
        case OP_LE:
            *a = un ? NAN : *a <= b;
            break;
        case OP_GT:
            *a = un ? NAN : *a > b;
            break;
        case OP_GE:
            *a = un ? NAN : *a >= b;
            break;
        case OP_EQ:
            *a = un ? NAN : *a == b;
            break;
        case OP_NE:
            *a = un ? NAN : *a != b;
            break;
        case OP_AND:
            *a = (*a == 0 || b == 0) ? 0 : un ? NAN : 1;
            break;
        case OP_OR:
            *a = ((*a != 0 && !isnan(*a)) || (b != 0 && !isnan(b))) ? 1 : un ? NAN : 0;
            break;
        }
    }
    return sp == 1 ? st[0] : NAN;
}

int expr_eval(const ccs_expr *e, const double *vals)
{
    double v = run(e->code, e->n, vals);
    return isnan(v) ? EXPR_UNDEFINED : v != 0;
}
