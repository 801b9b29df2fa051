/* test_model.c - parameter counts, checked against hand calculations written
 * out here from each architecture's published shape. */
#include "testutil.h"

#include "ccsweep/cost/analytic.h"
#include "ccsweep/model/model.h"

/* GPT-3 175B (Brown et al. 2020, Table 2.1: 96 layers, d_model 12288, 96 heads,
 * vocab 50257, context 2048, learned positions, tied head). Per layer:
 * QKV 3h^2 + 3h, out h^2 + h, MLP 8h^2 + 5h, two LayerNorms 4h = 12h^2 + 13h. */
static void test_gpt3_params(void **state)
{
    (void)state;
    const ccs_model *m = catalog_model(test_cat(), "gpt3-175b");
    assert_non_null(m);
    double h = 12288, L = 96, V = 50257, P = 2048;
    double layer = 12 * h * h + 13 * h;
    double total = L * layer + V * h + P * h + 2 * h; /* + final LayerNorm */
    assert_rel(model_layer_params(m), layer, 1e-12);
    assert_rel(model_params(m), total, 1e-12);
    assert_rel(total, 174604259328.0, 1e-12);  /* the sum above, evaluated */
    assert_rel(model_params(m), 175e9, 0.005); /* the paper's "175B" */
}

/* Llama 2 70B (Touvron et al. 2023): 80 layers, h 8192, 64 heads, 8 KV heads
 * (GQA, kv dim 1024), SwiGLU FFN 28672, vocab 32000, RMSNorm, no biases,
 * untied head. Per layer: Q and O 2h^2, K and V 2*h*1024, MLP 3*h*f, norms 2h. */
static void test_llama2_70b_params(void **state)
{
    (void)state;
    const ccs_model *m = catalog_model(test_cat(), "llama2-70b");
    assert_non_null(m);
    double h = 8192, L = 80, f = 28672, V = 32000, kv = 1024;
    double layer = 2 * h * h + 2 * h * kv + 3 * h * f + 2 * h;
    assert_rel(layer, 855654400.0, 1e-12);
    double total = L * layer + 2 * V * h + h;
    assert_rel(model_params(m), total, 1e-12);
    assert_rel(total, 68976648192.0, 1e-12); /* Hugging Face reports 68.98B */
}

/* Llama 3 8B (Meta 2024 model card): 32 layers, h 4096, 32 heads, 8 KV heads,
 * FFN 14336, vocab 128256, untied: 8,030,261,248 parameters. */
static void test_llama3_8b_params(void **state)
{
    (void)state;
    const ccs_model *m = catalog_model(test_cat(), "llama3-8b");
    assert_non_null(m);
    double h = 4096, L = 32, f = 14336, V = 128256, kv = 1024;
    double total = L * (2 * h * h + 2 * h * kv + 3 * h * f + 2 * h) + 2 * V * h + h;
    assert_rel(model_params(m), total, 1e-12);
    assert_rel(total, 8030261248.0, 1e-12);
}

/* Megatron 1T (Narayanan et al. 2021, Table 1: 128 layers, h 25600, 160 heads,
 * vocab 51200): the paper's 12 L h^2 (1 + 13/(12h) + (V + s)/(12 L h)) = 1008B. */
static void test_megatron_1t_params(void **state)
{
    (void)state;
    const ccs_model *m = catalog_model(test_cat(), "megatron-1t");
    assert_non_null(m);
    double h = 25600, L = 128, V = 51200, s = 2048;
    double eq2 = 12 * L * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * L * h));
    assert_rel(model_params(m), eq2, 1e-6);
    assert_rel(model_params(m), 1008e9, 0.001);
}

/* Mistral NeMo 12B (mistralai/Mistral-Nemo-Base-2407 config.json: hidden
 * 5120, 40 layers, 32 heads of head_dim 128, 8 KV heads, intermediate
 * 14336, vocab 131072, untied; the model card's 12.25B): the query
 * projection is 5120 x 4096, not 5120 x 5120. By hand:
 *   attention 5120 x 4096 + 2 x 5120 x 1024 + 4096 x 5120 = 52,428,800
 *   MLP 3 x 5120 x 14336 = 220,200,960, two RMSNorms 10,240
 *   40 x 272,640,000 + 2 x 131072 x 5120 + 5120 = 12,247,782,400 */
static ccs_model nemo(void)
{
    return test_mistral_nemo();
}

static void test_head_dim(void **state)
{
    (void)state;
    ccs_model m = nemo();
    ccs_err err;
    assert_int_equal(model_validate(&m, &err), CCS_OK);
    assert_int_equal(m.head_dim, 128);
    assert_true(model_q_dim(&m) == 4096 && model_kv_dim(&m) == 1024);
    assert_true(model_qk_head_dim(&m) == 128 && model_v_head_dim(&m) == 128);
    assert_true(model_attn_params(&m) == 52428800.0);
    assert_true(model_params(&m) == 12247782400.0);
    /* head_dim = hidden / heads is the shape without it: one form */
    ccs_model d = m;
    d.head_dim = 160;
    model_fill_defaults(&d);
    assert_int_equal(d.head_dim, 0);
    assert_true(model_q_dim(&d) == 5120 && model_kv_dim(&d) == 1280);
    /* the same count with 160-wide heads: 12,772,070,400 (12.77B) */
    assert_true(model_params(&d) == 12772070400.0);
    /* with head_dim, heads need not divide hidden */
    d = m;
    d.hidden = 5000;
    assert_int_equal(model_validate(&d, &err), CCS_OK);
    d.head_dim = 0;
    assert_int_equal(model_validate(&d, &err), CCS_EINPUT);
    assert_non_null(strstr(err.msg, "or give head_dim"));
    d = m;
    d.head_dim = -1;
    assert_int_equal(model_validate(&d, &err), CCS_EINPUT);
    assert_non_null(strstr(err.msg, "'head_dim'"));
}

/* Mixtral 8x7B (Jiang et al. 2024, arXiv 2401.04088, Table 1: dim 4096, 32
 * layers, 32 heads of 128, 8 KV heads, hidden_dim 14336, vocab 32000, 8
 * experts, top 2): 46.7B parameters in all, 12.9B active per token (section
 * 2.1: "13B active parameters"; the released model card: 46.7B, 12.9B). The
 * active count: attention, norms, router and 2 of the 8 experts per layer. */
static void test_moe_params(void **state)
{
    (void)state;
    ccs_model m = {.name = "mixtral",
                   .layers = 32,
                   .hidden = 4096,
                   .heads = 32,
                   .kv_heads = 8,
                   .ffn = 14336,
                   .vocab = 32000,
                   .gated = 1,
                   .experts = 8,
                   .top_k = 2};
    model_fill_defaults(&m);
    ccs_err err;
    assert_int_equal(model_validate(&m, &err), CCS_OK);
    assert_int_equal(m.moe_ffn, 14336);
    assert_rel(model_params(&m), 46.7e9, 0.005);
    double expert = 3.0 * 4096 * 14336;
    assert_rel(model_expert_params(&m), 8 * expert, 1e-12);
    double active = model_params(&m) - m.layers * 6 * expert;
    assert_rel(active, 12.9e9, 0.01);
    /* a token's FFN work is its router and two experts */
    ccs_model dense = m;
    dense.experts = dense.top_k = 0;
    double f_moe = analytic_layer_fwd_flops(&m, 1, 1),
           f_dense = analytic_layer_fwd_flops(&dense, 1, 1);
    assert_rel(f_moe - f_dense, 2 * 4096 * 8 + 2 * expert * 2 - 2 * expert, 1e-9);
    /* bad MoE shapes */
    m.top_k = 9;
    assert_int_equal(model_validate(&m, &err), CCS_EINPUT);
    assert_non_null(strstr(err.msg, "top_k"));
    dense.shared_experts = 1;
    assert_int_equal(model_validate(&dense, &err), CCS_EINPUT);
}

/* DeepSeek-V3 (arXiv 2412.19437, Sec. 4.2; the released config.json): 61
 * blocks, hidden 7168, 128 heads, latent attention with q_lora_rank 1536,
 * kv_lora_rank 512, qk_nope 128 + qk_rope 64, v 128; the first 3 blocks a
 * dense SwiGLU FFN of 18432, the other 58 a router, 256 routed experts and 1
 * shared of 2048 (top 8); vocab 129280, untied, RMSNorm. The paper: 671B
 * total, 37B activated per token; the checkpoint README: 36.6B activated
 * counting the output head (0.9B) but not the input embedding. Counted here:
 * the main model, not the multi-token-prediction module (one more block,
 * 11.5B of its own, in the checkpoint only). By hand, per block:
 *   attention: q down 7168*1536 = 11,010,048, q norm 1536,
 *              q up 1536*128*192 = 37,748,736,
 *              kv down 7168*(512+64) = 4,128,768, kv norm 512,
 *              kv up 512*128*(128+128) = 16,777,216,
 *              out 128*128*7168 = 117,440,512          -> 187,107,328
 *   two RMSNorms 2*7168 = 14,336
 *   dense FFN 3*7168*18432 = 396,361,728   -> dense block 583,483,392
 *   expert 3*7168*2048 = 44,040,192; router 7168*256 = 1,835,008;
 *   256 routed + 1 shared = 11,318,329,344 -> expert block 11,507,286,016
 *   embedding = head = 129280*7168 = 926,679,040, final norm 7168.
 * Total 3*583,483,392 + 58*11,507,286,016 + 2*926,679,040 + 7168
 *     = 671,026,404,352. Activated: 248 of the 256 routed experts idle in
 * each of the 58 expert blocks: 671,026,404,352 - 58*248*44,040,192
 *     = 37,552,282,624; without the input embedding 36,625,603,584. */
static void test_deepseek_v3_params(void **state)
{
    (void)state;
    const ccs_model *m = catalog_model(test_cat(), "deepseek-v3");
    assert_non_null(m);
    assert_true(model_is_mla(m));
    assert_int_equal(model_dense_layers(m), 3);
    assert_rel(model_attn_params(m), 187107328.0, 1e-15);
    assert_rel(model_layer_params(m), 11507286016.0, 1e-15);
    ccs_model dense;
    model_dense_variant(m, &dense);
    assert_rel(model_layer_params(&dense), 583483392.0, 1e-15);
    double total = model_params(m);
    assert_rel(total, 671026404352.0, 1e-15);
    assert_rel(total, 671e9, 0.001); /* the paper's figure */
    double active = total - 58.0 * 248 * 44040192.0;
    assert_rel(active, 37552282624.0, 1e-15);
    assert_rel(active, 37e9, 0.02);                                /* the paper's 37B, rounded */
    assert_rel(active - model_embedding_params(m), 36.6e9, 0.001); /* the README's 36.6B */
    /* head widths of the attention kernel */
    assert_rel(model_qk_head_dim(m), 192, 1e-15);
    assert_rel(model_v_head_dim(m), 128, 1e-15);
    /* a token's forward FLOPs in a dense and an expert block differ by the
     * router and the FFN widths: 9 experts of 2048 = one FFN of 18432 */
    double fd = analytic_layer_fwd_flops(&dense, 1, 1), fe = analytic_layer_fwd_flops(m, 1, 1);
    assert_rel(fe - fd, 2.0 * 7168 * 256, 1e-9);
}

/* Latent-attention and dense-first shapes that cannot be: each refused with
 * the field named. */
static void test_mla_validate(void **state)
{
    (void)state;
    const ccs_model *ds = catalog_model(test_cat(), "deepseek-v3");
    assert_non_null(ds);
    ccs_err err;
    ccs_model m = *ds;
    assert_int_equal(model_validate(&m, &err), CCS_OK);
    m.kv_heads = 8;
    assert_int_equal(model_validate(&m, &err), CCS_EINPUT);
    assert_non_null(strstr(err.msg, "'kv_heads'"));
    m = *ds;
    m.v_head_dim = 0;
    assert_int_equal(model_validate(&m, &err), CCS_EINPUT);
    assert_non_null(strstr(err.msg, "'v_head_dim'"));
    m = *ds;
    m.kv_lora_rank = 0; /* the other latent fields without latent attention */
    assert_int_equal(model_validate(&m, &err), CCS_EINPUT);
    assert_non_null(strstr(err.msg, "'q_lora_rank'"));
    m = *ds;
    m.dense_layers = 61; /* no expert block left */
    assert_int_equal(model_validate(&m, &err), CCS_EINPUT);
    assert_non_null(strstr(err.msg, "'dense_layers'"));
    model_dense_variant(ds, &m);
    m.dense_layers = 1; /* dense blocks of a dense model */
    assert_int_equal(model_validate(&m, &err), CCS_EINPUT);
    assert_non_null(strstr(err.msg, "'dense_layers'"));
    /* heads need not divide hidden under latent attention */
    m = *ds;
    m.heads = m.kv_heads = 96;
    m.hidden = 7000;
    assert_int_equal(model_validate(&m, &err), CCS_OK);
}

static void test_validate(void **state)
{
    (void)state;
    ccs_model m = {.name = "x", .layers = 2, .hidden = 100, .heads = 3, .vocab = 10};
    model_fill_defaults(&m);
    ccs_err err;
    assert_int_equal(model_validate(&m, &err), CCS_EINPUT); /* 3 does not divide 100 */
    assert_non_null(strstr(err.msg, "heads"));
    m.heads = 4;
    m.kv_heads = 3;
    assert_int_equal(model_validate(&m, &err), CCS_EINPUT);
    assert_non_null(strstr(err.msg, "kv_heads"));
    m.kv_heads = 2;
    assert_int_equal(model_validate(&m, &err), CCS_OK);
    m.layers = 0;
    assert_int_equal(model_validate(&m, &err), CCS_EINPUT);
    assert_non_null(strstr(err.msg, "layers"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpt3_params),      cmocka_unit_test(test_llama2_70b_params),
        cmocka_unit_test(test_llama3_8b_params), cmocka_unit_test(test_megatron_1t_params),
        cmocka_unit_test(test_validate),         cmocka_unit_test(test_moe_params),
        cmocka_unit_test(test_head_dim),         cmocka_unit_test(test_deepseek_v3_params),
        cmocka_unit_test(test_mla_validate),
    };
    return cmocka_run_group_tests_name("model", tests, test_catalog_setup, test_catalog_teardown);
}
