/* neuroedge int8 kernels (see ne_int8.h). Right shifts of negative int32 values are
 * arithmetic, as on every compiler TFLite Micro supports (C99 leaves it to the
 * implementation; GCC and Clang define it so). */
#include "ne_int8.h"

static int32_t ne_clamp_i32(int32_t v, int32_t lo, int32_t hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

/* TFLite's MultiplyByQuantizedMultiplier: x * mult * 2^(shift - 31), rounded.
 * SaturatingRoundingDoublingHighMul, then RoundingDivideByPOT. A left shift (shift > 0) is
 * formed in 64 bits and saturated, where TFLite's int32 product would overflow. */
int32_t ne_requantize(int32_t x, int32_t mult, int32_t shift)
{
    const int32_t left = shift > 0 ? shift : 0;
    const int32_t right = shift > 0 ? 0 : -shift;
    const int64_t wide = (int64_t)x * ((int64_t)1 << left);
    const int32_t a = wide > INT32_MAX ? INT32_MAX
                      : (wide < INT32_MIN ? INT32_MIN : (int32_t)wide);
    int32_t high, mask, remainder, threshold;
    if (a == INT32_MIN && mult == INT32_MIN) {
        high = INT32_MAX;
    } else {
        const int64_t ab = (int64_t)a * (int64_t)mult;
        const int64_t nudge = ab >= 0 ? ((int64_t)1 << 30) : (1 - ((int64_t)1 << 30));
        high = (int32_t)((ab + nudge) / ((int64_t)1 << 31));   /* C division: towards 0 */
    }
    mask = (int32_t)(((int64_t)1 << right) - 1);
    remainder = high & mask;
    threshold = (mask >> 1) + (high < 0 ? 1 : 0);
    return (high >> right) + (remainder > threshold ? 1 : 0);
}

#if NE_USE_CONV
/* plain, depthwise (groups = in_c) and grouped convolution, zero padding */
void ne_conv2d(const ne_conv_t *p, const int8_t *x, int8_t *y)
{
    const int32_t cin_g = p->in_c / p->groups;
    const int32_t cout_g = p->out_c / p->groups;
    const int32_t taps = p->k_h * p->k_w;
    int32_t oc, oy, ox, ic, ky, kx;
    for (oc = 0; oc < p->out_c; oc++) {
        const int8_t *w = p->weight + oc * cin_g * taps;
        const int8_t *xg = x + (oc / cout_g) * cin_g * p->in_h * p->in_w;
        const int32_t bias = p->bias[oc], mult = p->mult[oc], shift = p->shift[oc];
        int8_t *yc = y + oc * p->out_h * p->out_w;
        for (oy = 0; oy < p->out_h; oy++) {
            for (ox = 0; ox < p->out_w; ox++) {
                int32_t acc = bias;
                for (ic = 0; ic < cin_g; ic++) {
                    const int8_t *xc = xg + ic * p->in_h * p->in_w;
                    const int8_t *wc = w + ic * taps;
                    for (ky = 0; ky < p->k_h; ky++) {
                        const int32_t iy = oy * p->stride_h - p->pad_h + ky * p->dil_h;
                        if (iy < 0 || iy >= p->in_h) {
                            continue;
                        }
                        for (kx = 0; kx < p->k_w; kx++) {
                            const int32_t ix = ox * p->stride_w - p->pad_w + kx * p->dil_w;
                            if (ix < 0 || ix >= p->in_w) {
                                continue;
                            }
                            acc += ((int32_t)xc[iy * p->in_w + ix] + p->in_offset)
                                   * (int32_t)wc[ky * p->k_w + kx];
                        }
                    }
                }
                acc = ne_requantize(acc, mult, shift) + p->out_offset;
                yc[oy * p->out_w + ox] = (int8_t)ne_clamp_i32(acc, p->act_min, p->act_max);
            }
        }
    }
}
#endif

#if NE_USE_FC
void ne_fully_connected(const ne_fc_t *p, const int8_t *x, int8_t *y)
{
    int32_t o, i;
    for (o = 0; o < p->n_out; o++) {
        const int8_t *w = p->weight + o * p->n_in;
        int32_t acc = p->bias[o];
        for (i = 0; i < p->n_in; i++) {
            acc += ((int32_t)x[i] + p->in_offset) * (int32_t)w[i];
        }
        acc = ne_requantize(acc, p->mult[o], p->shift[o]) + p->out_offset;
        y[o] = (int8_t)ne_clamp_i32(acc, p->act_min, p->act_max);
    }
}
#endif

#if NE_USE_MAXPOOL
void ne_max_pool(const ne_pool_t *p, const int8_t *x, int8_t *y)
{
    int32_t c, oy, ox, ky, kx;
    for (c = 0; c < p->c; c++) {
        const int8_t *xc = x + c * p->in_h * p->in_w;
        for (oy = 0; oy < p->out_h; oy++) {
            for (ox = 0; ox < p->out_w; ox++) {
                int32_t best = -128;
                for (ky = 0; ky < p->k_h; ky++) {
                    const int32_t iy = oy * p->stride_h - p->pad_h + ky;
                    if (iy < 0 || iy >= p->in_h) {
                        continue;
                    }
                    for (kx = 0; kx < p->k_w; kx++) {
                        const int32_t ix = ox * p->stride_w - p->pad_w + kx;
                        if (ix >= 0 && ix < p->in_w && xc[iy * p->in_w + ix] > best) {
                            best = xc[iy * p->in_w + ix];
                        }
                    }
                }
                y[(c * p->out_h + oy) * p->out_w + ox] =
                    (int8_t)ne_clamp_i32(best, p->act_min, p->act_max);
            }
        }
    }
}
#endif

#if NE_USE_AVGPOOL
/* the mean of the in-bounds values, rounded half away from zero (TFLM) */
void ne_avg_pool(const ne_pool_t *p, const int8_t *x, int8_t *y)
{
    int32_t c, oy, ox, ky, kx;
    for (c = 0; c < p->c; c++) {
        const int8_t *xc = x + c * p->in_h * p->in_w;
        for (oy = 0; oy < p->out_h; oy++) {
            for (ox = 0; ox < p->out_w; ox++) {
                int32_t acc = 0, count = 0;
                for (ky = 0; ky < p->k_h; ky++) {
                    const int32_t iy = oy * p->stride_h - p->pad_h + ky;
                    if (iy < 0 || iy >= p->in_h) {
                        continue;
                    }
                    for (kx = 0; kx < p->k_w; kx++) {
                        const int32_t ix = ox * p->stride_w - p->pad_w + kx;
                        if (ix >= 0 && ix < p->in_w) {
                            acc += xc[iy * p->in_w + ix];
                            count++;
                        }
                    }
                }
                acc = acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;
                y[(c * p->out_h + oy) * p->out_w + ox] =
                    (int8_t)ne_clamp_i32(acc, p->act_min, p->act_max);
            }
        }
    }
}
#endif

#if NE_USE_ADD
/* TFLite's int8 add: both inputs to a common scale with 20 bits of headroom, then out */
void ne_add(const ne_add_t *p, const int8_t *a, const int8_t *b, int8_t *y)
{
    int32_t i;
    for (i = 0; i < p->n; i++) {
        const int32_t sa = ne_requantize(((int32_t)a[i] + p->in1_offset) * (1 << 20),
                                         p->mult1, p->shift1);
        const int32_t sb = ne_requantize(((int32_t)b[i] + p->in2_offset) * (1 << 20),
                                         p->mult2, p->shift2);
        const int32_t out = ne_requantize(sa + sb, p->out_mult, p->out_shift) + p->out_offset;
        y[i] = (int8_t)ne_clamp_i32(out, p->act_min, p->act_max);
    }
}
#endif

#if NE_USE_CLAMP
void ne_clamp(const ne_clamp_t *p, const int8_t *x, int8_t *y)
{
    int32_t i;
    for (i = 0; i < p->n; i++) {
        y[i] = (int8_t)ne_clamp_i32(x[i], p->act_min, p->act_max);
    }
}
#endif
