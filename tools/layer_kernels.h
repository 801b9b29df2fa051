/* layer_kernels.h - the fp32 CPU kernels of a Transformer layer besides its
 * GEMMs: what tools/groundtruth.c executes and tools/profiler.c times, so the
 * profile measures the kernels the layer really runs (as a GPU profile times
 * the framework's own fused kernels). Header-only, static functions; the
 * operator list of src/cost/regions.c is not used here.
 *
 * Traffic per element (fp32, mask bytes 1), the convention of the profile:
 *   bias-dropout-add fwd 13 (x, r, y, mask)   dropout fwd 9 (x, y, mask)
 *   dropout bwd 9 (dy, mask, dx)              gelu fwd 8, gelu bwd 12
 *   layernorm fwd 8, bwd 16 (x, dy, dres, dx) softmax fwd 8, bwd 12 (y, dy, dx) */
#ifndef CCSWEEP_LAYER_KERNELS_H
#define CCSWEEP_LAYER_KERNELS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#define LK_GELU_C 0.7978845608f /* sqrt(2/pi) */
#define LK_GELU_A 0.044715f

/* Counter-based hash (the dropout mask stream; Philox-like in spirit, cheap). */
static inline uint32_t lk_hash(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

static inline uint8_t lk_keep(uint32_t seed, size_t i, uint32_t thresh)
{
    return lk_hash(seed ^ (uint32_t)i ^ (uint32_t)(i >> 32) * 0x9e3779b9U) >= thresh;
}

static inline uint32_t lk_thresh(float p)
{
    return (uint32_t)(p * 4294967295.0);
}

/* y = r + (x + bias[col]) * keep / (1 - p), mask written (Megatron's
 * bias-dropout-add after a row-parallel linear). */
static inline void lk_bda_fwd(size_t rows, size_t cols, const float *x, const float *bias,
                              const float *r, float *y, uint8_t *mask, float p, uint32_t seed)
{
    uint32_t th = lk_thresh(p);
    float sc = 1.0f / (1.0f - p);
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) {
            size_t q = i * cols + j;
            uint8_t k = lk_keep(seed, q, th);
            mask[q] = k;
            y[q] = r[q] + (k ? (x[q] + bias[j]) * sc : 0.0f);
        }
}

/* y = x * keep / (1 - p) over n elements, mask written (attention dropout). */
static inline void lk_dropout_fwd(size_t n, const float *x, float *y, uint8_t *mask, float p,
                                  uint32_t seed)
{
    uint32_t th = lk_thresh(p);
    float sc = 1.0f / (1.0f - p);
    for (size_t q = 0; q < n; q++) {
        uint8_t k = lk_keep(seed, q, th);
        mask[q] = k;
        y[q] = k ? x[q] * sc : 0.0f;
    }
}

/* dx = dy * mask / (1 - p); with dbias, also dbias[col] += dx (the bias
 * gradient of the linear whose output was dropped out). */
static inline void lk_dropout_bwd(size_t rows, size_t cols, const float *dy, const uint8_t *mask,
                                  float p, float *dx, float *dbias)
{
    float sc = 1.0f / (1.0f - p);
    for (size_t i = 0; i < rows; i++) {
        const float *a = dy + i * cols;
        const uint8_t *m = mask + i * cols;
        float *o = dx + i * cols;
        for (size_t j = 0; j < cols; j++)
            o[j] = m[j] ? a[j] * sc : 0.0f;
        if (dbias)
            for (size_t j = 0; j < cols; j++)
                dbias[j] += o[j];
    }
}

/* g = gelu(h + bias[col]), tanh form (Megatron's bias_gelu). */
static inline void lk_gelu_fwd(size_t rows, size_t cols, const float *h, const float *bias,
                               float *g)
{
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) {
            float z = h[i * cols + j] + bias[j];
            g[i * cols + j] = 0.5f * z * (1.0f + tanhf(LK_GELU_C * z * (1.0f + LK_GELU_A * z * z)));
        }
}

/* In place: d <- d * gelu'(h + bias[col]); dbias[col] += the result. */
static inline void lk_gelu_bwd(size_t rows, size_t cols, const float *h, const float *bias,
                               float *d, float *dbias)
{
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) {
            size_t q = i * cols + j;
            float z = h[q] + bias[j];
            float t = tanhf(LK_GELU_C * z * (1.0f + LK_GELU_A * z * z));
            float ff =
                0.5f * z * ((1.0f - t * t) * (LK_GELU_C + 3.0f * LK_GELU_A * LK_GELU_C * z * z)) +
                0.5f * (1.0f + t);
            d[q] *= ff;
            dbias[j] += d[q];
        }
}

/* y = (x - mean) * rstd * gamma + beta per row; mean and rstd saved. */
static inline void lk_layernorm_fwd(size_t rows, size_t cols, const float *x, const float *gamma,
                                    const float *beta, float *y, float *mean, float *rstd)
{
    for (size_t i = 0; i < rows; i++) {
        const float *a = x + i * cols;
        float s = 0, ss = 0;
        for (size_t j = 0; j < cols; j++)
            s += a[j];
        float mu = s / (float)cols;
        for (size_t j = 0; j < cols; j++)
            ss += (a[j] - mu) * (a[j] - mu);
        float rs = 1.0f / sqrtf(ss / (float)cols + 1e-5f);
        mean[i] = mu;
        rstd[i] = rs;
        float *o = y + i * cols;
        for (size_t j = 0; j < cols; j++)
            o[j] = (a[j] - mu) * rs * gamma[j] + beta[j];
    }
}

/* dx = layernorm'(x)^T dy + dres per row (dres: the residual branch's
 * gradient, may alias dx); dgamma, dbeta accumulated. */
static inline void lk_layernorm_bwd(size_t rows, size_t cols, const float *x, const float *dy,
                                    const float *dres, const float *gamma, const float *mean,
                                    const float *rstd, float *dx, float *dgamma, float *dbeta)
{
    for (size_t i = 0; i < rows; i++) {
        const float *a = x + i * cols, *g = dy + i * cols, *r = dres + i * cols;
        float *o = dx + i * cols;
        float mu = mean[i], rs = rstd[i], s1 = 0, s2 = 0;
        for (size_t j = 0; j < cols; j++) {
            float xh = (a[j] - mu) * rs, gg = g[j] * gamma[j];
            s1 += gg;
            s2 += gg * xh;
            dgamma[j] += g[j] * xh;
            dbeta[j] += g[j];
        }
        s1 /= (float)cols;
        s2 /= (float)cols;
        for (size_t j = 0; j < cols; j++) {
            float xh = (a[j] - mu) * rs;
            o[j] = r[j] + rs * (g[j] * gamma[j] - s1 - xh * s2);
        }
    }
}

/* Causal softmax over blocks of s x s scores (row i sees columns 0..i);
 * y may alias x. */
static inline void lk_softmax_fwd(size_t blocks, size_t s, const float *x, float *y)
{
    for (size_t b = 0; b < blocks; b++)
        for (size_t i = 0; i < s; i++) {
            const float *a = x + (b * s + i) * s;
            float *o = y + (b * s + i) * s;
            float mx = a[0], sum = 0;
            for (size_t j = 1; j <= i; j++)
                mx = a[j] > mx ? a[j] : mx;
            for (size_t j = 0; j <= i; j++) {
                o[j] = expf(a[j] - mx);
                sum += o[j];
            }
            float inv = 1.0f / sum;
            for (size_t j = 0; j <= i; j++)
                o[j] *= inv;
            for (size_t j = i + 1; j < s; j++)
                o[j] = 0.0f;
        }
}

/* dx = y * (dy - sum(y * dy)) per row; dx may alias dy. */
static inline void lk_softmax_bwd(size_t blocks, size_t s, const float *y, const float *dy,
                                  float *dx)
{
    for (size_t r = 0; r < blocks * s; r++) {
        const float *a = y + r * s, *g = dy + r * s;
        float *o = dx + r * s;
        float dot = 0;
        for (size_t j = 0; j < s; j++)
            dot += a[j] * g[j];
        for (size_t j = 0; j < s; j++)
            o[j] = a[j] * (g[j] - dot);
    }
}

/* acc[col] += sum over rows of x (a bias gradient). */
static inline void lk_colsum(size_t rows, size_t cols, const float *x, float *acc)
{
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            acc[j] += x[i * cols + j];
}

/* Every row of y = bias (the C operand of a GEMM with beta = 1). */
static inline void lk_bias_rows(size_t rows, size_t cols, const float *bias, float *y)
{
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            y[i * cols + j] = bias[j];
}

#endif
