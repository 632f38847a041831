/* neuroedge int8 kernels: TFLite Micro / CMSIS-NN arithmetic (int8 activations, per-channel
 * int8 weights, int32 accumulators, fixed-point requantisation), C99 + <stdint.h>, no malloc,
 * no float. Activations are channel-first (C, H, W) per sample. The numpy reference of
 * every kernel is sim/bitwise/int8.py; the export's golden test requires bit equality. */
#ifndef NE_INT8_H
#define NE_INT8_H

#include <stdint.h>

#include "ne_config.h"

typedef struct {
    const int8_t *weight;   /* [out_c][in_c / groups][k_h][k_w] */
    const int32_t *bias;    /* [out_c] */
    const int32_t *mult;    /* [out_c] Q31 multipliers */
    const int32_t *shift;   /* [out_c] power-of-two exponents */
    int32_t in_c, in_h, in_w, out_c, out_h, out_w, k_h, k_w;
    int32_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups;
    int32_t in_offset, out_offset, act_min, act_max;
} ne_conv_t;

typedef struct {
    const int8_t *weight;   /* [n_out][n_in] */
    const int32_t *bias;
    const int32_t *mult;
    const int32_t *shift;
    int32_t n_in, n_out, in_offset, out_offset, act_min, act_max;
} ne_fc_t;

typedef struct {
    int32_t c, in_h, in_w, out_h, out_w, k_h, k_w, stride_h, stride_w, pad_h, pad_w;
    int32_t act_min, act_max;
} ne_pool_t;

typedef struct {
    int32_t n, in1_offset, in2_offset, out_offset;
    int32_t mult1, shift1, mult2, shift2, out_mult, out_shift, act_min, act_max;
} ne_add_t;

typedef struct {
    /* y[o][i] = a[o][i] * b[o * b_outer_stride + i * b_step]: b of a's shape (outer 1,
     * b_step 1) or one value per channel o (b_outer_stride 1, b_step 0) */
    int32_t outer, inner, b_outer_stride, b_step;
    int32_t in1_offset, in2_offset, out_offset, mult, shift, act_min, act_max;
} ne_mul_t;

typedef struct {
    int32_t n, in_offset, out_offset, mult, shift;   /* one input of a concatenation */
} ne_concat_t;

typedef struct {
    const int8_t *alpha;    /* [c]: symmetric int8, one per channel */
    int32_t c, inner, in_offset, out_offset, mult1, shift1, mult2, shift2;
} ne_prelu_t;

typedef struct {
    int32_t n, act_min, act_max;
} ne_clamp_t;

typedef struct {
    const int8_t *table;    /* [256]: the output of input q at table[q + 128] */
    int32_t n;
} ne_lut_t;

int32_t ne_requantize(int32_t x, int32_t mult, int32_t shift);
#if NE_USE_CONV
void ne_conv2d(const ne_conv_t *p, const int8_t *x, int8_t *y);
#endif
#if NE_USE_FC
void ne_fully_connected(const ne_fc_t *p, const int8_t *x, int8_t *y);
#endif
#if NE_USE_MAXPOOL
void ne_max_pool(const ne_pool_t *p, const int8_t *x, int8_t *y);
#endif
#if NE_USE_AVGPOOL
void ne_avg_pool(const ne_pool_t *p, const int8_t *x, int8_t *y);
#endif
#if NE_USE_ADD
void ne_add(const ne_add_t *p, const int8_t *a, const int8_t *b, int8_t *y);
#endif
#if NE_USE_MUL
void ne_mul(const ne_mul_t *p, const int8_t *a, const int8_t *b, int8_t *y);
#endif
#if NE_USE_CONCAT
void ne_concat(const ne_concat_t *p, const int8_t *x, int8_t *y);
#endif
#if NE_USE_PRELU
void ne_prelu(const ne_prelu_t *p, const int8_t *x, int8_t *y);
#endif
#if NE_USE_LUT
void ne_lut(const ne_lut_t *p, const int8_t *x, int8_t *y);
#endif
#if NE_USE_CLAMP
void ne_clamp(const ne_clamp_t *p, const int8_t *x, int8_t *y);
#endif

#endif
