/* attention.c - fused attention kernel throughput (attention.h) from
 * published benchmarks.
 *
 * Every table below is TFLOP/s as the FlashAttention benchmarks report it
 * (Dao-AILab/flash-attention benchmarks/benchmark_flash_attention.py and
 * hopper/benchmark_attn.py: forward FLOPs 4 b s^2 h d, backward 2.5 times
 * that, halved under a causal mask; fp16, hidden 2048 so 32 heads at d = 64
 * and 16 at d = 128, batch x sequence = 16k tokens, no dropout), at sequence
 * lengths 512, 1k, 2k, 4k, 8k and 16k.
 *
 * Sources:
 * [FA2-A100] flash-attention assets/flash2_a100_fwd_bwd_benchmark.png (commit
 *   4f285b35, 2023-07-17; the FlashAttention-2 paper, Dao 2023, arXiv
 *   2307.08691, Figure 4): forward + backward on A100 80GB SXM4 of
 *   FlashAttention-2, of "FlashAttention" (the first one's CUDA kernels,
 *   flash-attn 1.x) and of "FlashAttention Triton": OpenAI Triton's kernel
 *   triton.ops.flash_attention, which benchmarks/benchmark_flash_attention.py
 *   (commit 60499abc, 2023-07-28) imports as attention_triton (not
 *   flash-attn's own flash_attn_triton.py). The 512-token non-causal d = 128
 *   FlashAttention-2 bar sits under the legend (~150) and is read as 150.
 * [FA2-H100] assets/flash2_h100_fwd_bwd_benchmark.png (same commit): forward +
 *   backward on H100 80GB SXM5 of FlashAttention-2.
 * [FA3-FWD] assets/flash3_fp16_fwd.png (commit 7ef24848, 2024-07-11; the
 *   FlashAttention-3 paper, Shah et al. 2024, arXiv 2407.08608): forward on
 *   H100 80GB SXM5 of cuDNN's fused attention and FlashAttention-3.
 * [FA3-BWD] the same paper's backward figure (non-causal, d = 64 and 128)
 *   for cuDNN and FlashAttention-3, as transcribed from the paper's images
 *   (the repository ships no copy): second-hand figures.
 * The GEMM figures the tables are scaled by ([MAMF] in
 * sweeps/catalog/hardware.yaml): best bf16 matmul 267.9 TFLOP/s on A100 SXM,
 * 792.1 on H100 SXM. */
#include "ccsweep/cost/attention.h"

#include <math.h>
#include <stddef.h>

enum { DEV_A100 = 1, DEV_H100 = 2 }; /* hw->attn_ref: CCS_ATTN_REF_* */
enum { PASS_FB = 0, PASS_F, PASS_B };
#define NSEQ 6 /* 512 .. 16k, doubling */

typedef struct curve {
    int8_t dev, kernel, pass, causal;
    int16_t hd;
    double tf[NSEQ];
} curve;

static const curve curves[] = {
    /* [FA2-A100] */
    {DEV_A100, CCS_ATTN_FA2, PASS_FB, 0, 64, {132, 153, 162, 171, 175, 176}},
    {DEV_A100, CCS_ATTN_FA2, PASS_FB, 0, 128, {150, 173, 187, 196, 201, 203}},
    {DEV_A100, CCS_ATTN_FA2, PASS_FB, 1, 64, {88, 119, 140, 156, 165, 171}},
    {DEV_A100, CCS_ATTN_FA2, PASS_FB, 1, 128, {99, 133, 155, 173, 182, 189}},
    {DEV_A100, CCS_ATTN_TRITON, PASS_FB, 0, 64, {90, 102, 98, 98, 100, 100}},
    {DEV_A100, CCS_ATTN_TRITON, PASS_FB, 0, 128, {78, 85, 90, 93, 95, 95}},
    {DEV_A100, CCS_ATTN_TRITON, PASS_FB, 1, 64, {59, 75, 79, 76, 79, 80}},
    {DEV_A100, CCS_ATTN_TRITON, PASS_FB, 1, 128, {50, 61, 68, 74, 78, 80}},
    {DEV_A100, CCS_ATTN_FA1, PASS_FB, 0, 64, {91, 92, 104, 108, 110, 110}},
    {DEV_A100, CCS_ATTN_FA1, PASS_FB, 0, 128, {76, 72, 76, 80, 82, 83}},
    {DEV_A100, CCS_ATTN_FA1, PASS_FB, 1, 64, {58, 70, 77, 87, 92, 97}},
    {DEV_A100, CCS_ATTN_FA1, PASS_FB, 1, 128, {55, 62, 69, 76, 80, 83}},
    /* [FA2-H100] */
    {DEV_H100, CCS_ATTN_FA2, PASS_FB, 0, 64, {215, 254, 274, 288, 294, 296}},
    {DEV_H100, CCS_ATTN_FA2, PASS_FB, 0, 128, {248, 294, 320, 326, 335, 338}},
    {DEV_H100, CCS_ATTN_FA2, PASS_FB, 1, 64, {141, 192, 232, 257, 273, 284}},
    {DEV_H100, CCS_ATTN_FA2, PASS_FB, 1, 128, {163, 221, 265, 294, 308, 328}},
    /* [FA3-FWD] */
    {DEV_H100, CCS_ATTN_CUDNN, PASS_F, 0, 64, {335, 373, 395, 408, 412, 413}},
    {DEV_H100, CCS_ATTN_CUDNN, PASS_F, 1, 64, {225, 288, 334, 363, 379, 388}},
    {DEV_H100, CCS_ATTN_CUDNN, PASS_F, 0, 128, {497, 574, 617, 609, 600, 595}},
    {DEV_H100, CCS_ATTN_CUDNN, PASS_F, 1, 128, {315, 410, 484, 518, 529, 539}},
    {DEV_H100, CCS_ATTN_CUDNN, PASS_F, 0, 256, {470, 546, 580, 581, 580, 581}},
    {DEV_H100, CCS_ATTN_CUDNN, PASS_F, 1, 256, {308, 391, 450, 483, 497, 509}},
    {DEV_H100, CCS_ATTN_FA3, PASS_F, 0, 64, {333, 392, 460, 476, 496, 497}},
    {DEV_H100, CCS_ATTN_FA3, PASS_F, 1, 64, {197, 265, 371, 420, 460, 473}},
    {DEV_H100, CCS_ATTN_FA3, PASS_F, 0, 128, {467, 565, 625, 638, 646, 648}},
    {DEV_H100, CCS_ATTN_FA3, PASS_F, 1, 128, {292, 423, 521, 579, 602, 616}},
    {DEV_H100, CCS_ATTN_FA3, PASS_F, 1, 256, {286, 427, 537, 612, 628, 642}},
    /* [FA3-BWD], non-causal only */
    {DEV_H100, CCS_ATTN_CUDNN, PASS_B, 0, 64, {266, 348, 395, 417, 432, 433}},
    {DEV_H100, CCS_ATTN_CUDNN, PASS_B, 0, 128, {305, 408, 465, 499, 518, 516}},
    {DEV_H100, CCS_ATTN_FA3, PASS_B, 0, 64, {272, 363, 422, 453, 472, 474}},
    {DEV_H100, CCS_ATTN_FA3, PASS_B, 0, 128, {316, 424, 501, 542, 559, 561}},
};
#define NCURVES (sizeof curves / sizeof curves[0])

/* [MAMF] best bf16 matmul of the benchmarked device, TFLOP/s */
static double dev_gemm_tflops(int dev)
{
    return dev == DEV_A100 ? 267.9 : 792.1;
}

/* The curve's value at seq: linear in log2(seq) between the measured
 * lengths, the nearest one outside them. */
static double at_seq(const curve *c, double seq)
{
    double x = seq > 1 ? log2(seq) - 9.0 : 0.0; /* 512 -> 0 */
    if (!(x > 0))
        return c->tf[0];
    if (x >= NSEQ - 1)
        return c->tf[NSEQ - 1];
    int i = (int)x;
    double f = x - i;
    return c->tf[i] + f * (c->tf[i + 1] - c->tf[i]);
}

/* A causal curve beyond its longest measured sequence: the mask's cost (the
 * partly masked diagonal blocks and the uneven work of the query blocks) is
 * a shrinking share of the whole as the sequence grows, so the curve keeps
 * the growth of its last measured doubling, linear in log2(seq), and never
 * passes the same kernel's unmasked figure there, which does the same blocks
 * without the mask (nc: that figure, 0 when not measured: the last value). */
static double causal_beyond(const curve *c, double seq, double nc)
{
    double x = log2(seq) - 9.0 - (NSEQ - 1);
    double last = c->tf[NSEQ - 1], slope = last - c->tf[NSEQ - 2];
    if (!(x > 0) || !(slope > 0) || !(nc > last))
        return last;
    double v = last + x * slope;
    return v < nc ? v : nc;
}

/* The curve's value at seq, a causal one beyond its measured lengths as
 * causal_beyond has it, bounded by its unmasked twin (same device, kernel,
 * pass and head dimension) where one is measured. */
static double curve_at(const curve *c, double seq)
{
    if (!c->causal || !(seq > (512 << (NSEQ - 1))))
        return at_seq(c, seq);
    double nc = 0;
    for (size_t i = 0; i < NCURVES; i++) {
        const curve *t = &curves[i];
        if (!t->causal && t->dev == c->dev && t->kernel == c->kernel && t->pass == c->pass &&
            t->hd == c->hd)
            nc = t->tf[NSEQ - 1];
    }
    return causal_beyond(c, seq, nc);
}

/* TFLOP/s of (dev, kernel, pass, causal) at head dimension hd: linear
 * between the two nearest measured head dimensions, the nearest outside
 * them; 0 when none is measured. */
static double measured(int dev, int kernel, int pass, int causal, double hd, double seq)
{
    const curve *lo = NULL, *hi = NULL;
    for (size_t i = 0; i < NCURVES; i++) {
        const curve *c = &curves[i];
        if (c->dev != dev || c->kernel != kernel || c->pass != pass || c->causal != causal)
            continue;
        if (c->hd <= hd && (!lo || c->hd > lo->hd))
            lo = c;
        if (c->hd >= hd && (!hi || c->hd < hi->hd))
            hi = c;
    }
    if (!lo && !hi)
        return 0;
    if (!lo || !hi || lo == hi)
        return curve_at(lo ? lo : hi, seq);
    double f = (hd - lo->hd) / (double)(hi->hd - lo->hd);
    double a = curve_at(lo, seq), b = curve_at(hi, seq);
    return a + f * (b - a);
}

/* Forward / backward throughput ratio of a kernel, for the devices where
 * only forward + backward was measured.
 * FlashAttention-2: up to 73% of the A100's peak forward and 63% backward
 * (Dao 2023, arXiv 2307.08691, section 4.1): 73 / 63.
 * FlashAttention Triton (OpenAI Triton's kernel): FlashAttention-2 is
 * 1.3-1.5 times as fast in the forward pass and about 2 times in the
 * backward pass (the same section, on the same A100 benchmark):
 * FlashAttention-2's ratio times 2 / 1.4 (the middle of 1.3-1.5).
 * FlashAttention (flash-attn 1.x CUDA): no separate forward and backward
 * figures found; FlashAttention-2's ratio.
 * flash_attn_triton.py: its header (flash-attn commit eff9fe6b, the copy
 * llm-foundry ships) says its forward is faster and its backward slower
 * than the CUDA FlashAttention's, the two together "slightly slower"; it
 * starts from Phil Tillet's Triton kernel (the one above), whose ratio it
 * takes. */
static double fwd_bwd_ratio(int kernel)
{
    double fa2 = 73.0 / 63.0;
    return kernel == CCS_ATTN_TRITON || kernel == CCS_ATTN_FA_TRITON ? fa2 * 2.0 / 1.4 : fa2;
}

/* The kernel's figure in a table of dev (0 when none). flash_attn_triton.py
 * (fa-triton) has no benchmark of its own. Its header (flash-attn commit
 * eff9fe6b, the copy llm-foundry ships) says it was tested on the A100, names
 * d = 64 and 128 as the head dimensions it was written for ("If you plan to
 * use headdim other than 64 and 128, you should test for race conditions")
 * and puts its forward + backward at about the CUDA FlashAttention's,
 * "slightly slower" (unquantified: taken as equal): a statement about the
 * kernel over those head dimensions, not about each. Its shape over the head
 * dimension is its lineage's: it starts from Phil Tillet's Triton kernel and
 * compiles with Triton, whose [FA2-A100] bars lose little from d = 64 to 128
 * (causal at 16k: 80 and 80; unmasked 100 and 95) where FlashAttention's
 * CUDA kernels lose 14-25% (97 and 83; 110 and 83). So at each sequence
 * length and mask: the mean of FlashAttention's d = 64 and 128 bars, times
 * the Triton kernel's bar at hd over the mean of its own two. */
static double table_rate(int dev, int kernel, int pass, int causal, double hd, double seq)
{
    if (kernel != CCS_ATTN_FA_TRITON)
        return measured(dev, kernel, pass, causal, hd, seq);
    double f = measured(dev, CCS_ATTN_FA1, pass, causal, 64, seq) +
               measured(dev, CCS_ATTN_FA1, pass, causal, 128, seq);
    double t = measured(dev, CCS_ATTN_TRITON, pass, causal, 64, seq) +
               measured(dev, CCS_ATTN_TRITON, pass, causal, 128, seq);
    double th = measured(dev, CCS_ATTN_TRITON, pass, causal, hd, seq);
    return f > 0 && t > 0 ? f * th / t : 0;
}

/* TFLOP/s of kernel on the benchmarked device dev in one pass: the pass's
 * own table; for a causal backward pass measured only without the mask, the
 * non-causal figure times the forward pass's causal / non-causal ratio (the
 * mask skips the same blocks in both); where only forward + backward was
 * measured, that figure split into the two passes at fwd_bwd_ratio. 0 when
 * dev has no figure. */
static double dev_rate(int dev, int kernel, double hd, double seq, int causal, int bwd)
{
    int pass = bwd ? PASS_B : PASS_F;
    double r = table_rate(dev, kernel, pass, causal, hd, seq);
    if (r > 0)
        return r;
    if (bwd && causal) {
        double nc = table_rate(dev, kernel, PASS_B, 0, hd, seq);
        double fc = table_rate(dev, kernel, PASS_F, 1, hd, seq);
        double fn = table_rate(dev, kernel, PASS_F, 0, hd, seq);
        if (nc > 0 && fc > 0 && fn > 0)
            return nc * fc / fn;
    }
    double fb = table_rate(dev, kernel, PASS_FB, causal, hd, seq);
    /* one figure for forward + backward (3.5 units of forward work in
     * 1/F + 2.5/B of time) split into its passes at the kernel's forward /
     * backward rate ratio rho: F = fb (1 + 2.5 rho) / 3.5, B = F / rho */
    double rho = fwd_bwd_ratio(kernel);
    double fwd = fb * (1 + 2.5 * rho) / 3.5;
    return bwd ? fwd / rho : fwd;
}

/* Share of the benchmarked device's best GEMM the kernel reaches there; a
 * kernel measured on one device only is carried to the other through
 * FlashAttention-2, measured on both (its ratio to FlashAttention-2). */
static double rel_eff(int dev, int kernel, double hd, double seq, int causal, int bwd)
{
    /* FA3 and cuDNN are Hopper kernels here: on the A100 FlashAttention-2
     * stands in for them */
    if (dev == DEV_A100 && (kernel == CCS_ATTN_FA3 || kernel == CCS_ATTN_CUDNN))
        kernel = CCS_ATTN_FA2;
    double r = dev_rate(dev, kernel, hd, seq, causal, bwd);
    if (r > 0)
        return r / dev_gemm_tflops(dev);
    int other = dev == DEV_A100 ? DEV_H100 : DEV_A100;
    double ko = dev_rate(other, kernel, hd, seq, causal, bwd);
    double fo = dev_rate(other, CCS_ATTN_FA2, hd, seq, causal, bwd);
    double fd = dev_rate(dev, CCS_ATTN_FA2, hd, seq, causal, bwd);
    if (ko > 0 && fo > 0 && fd > 0)
        return ko / fo * fd / dev_gemm_tflops(dev);
    return fd / dev_gemm_tflops(dev);
}

double attn_kernel_eff(const ccs_hw *hw, int kernel, double hd, double seq, int causal, int bwd)
{
    if (kernel < CCS_ATTN_FA2 || kernel >= CCS_ATTN_N || kernel == CCS_ATTN_UNFUSED)
        kernel = CCS_ATTN_FA2;
    int dev = hw->attn_ref == CCS_ATTN_REF_A100 ? DEV_A100 : DEV_H100;
    double e = rel_eff(dev, kernel, hd, seq, causal ? 1 : 0, bwd ? 1 : 0) *
               hw_gemm_eff(hw, CCS_BF16, NULL);
    if (!(e > 0))
        return 1e-3; /* not reached: every kernel has an FA2 path on both devices */
    return e < 1 ? e : 1;
}
