/* neuroedge int8 kernels (see ne_int8.h). Right shifts of negative int32 values are
 * arithmetic, as on every compiler TFLite Micro supports (C99 leaves it to the
 * implementation; GCC and Clang define it so). */
#include "ne_int8.h"

#if NE_USE_CONV || NE_USE_FC || NE_USE_MAXPOOL || NE_USE_AVGPOOL || NE_USE_ADD || NE_USE_CLAMP \
    || NE_USE_MUL || NE_USE_CONCAT || NE_USE_PRELU
static int32_t ne_clamp_i32(int32_t v, int32_t lo, int32_t hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}
#endif

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
/* the taps k in [*lo, *hi) whose position start + k * step lies in [0, size) */
static void ne_tap_range(int32_t start, int32_t step, int32_t k, int32_t size, int32_t *lo,
                         int32_t *hi)
{
    int32_t a = 0, b = k;
    while (a < k && start + a * step < 0) {
        a++;
    }
    while (b > a && start + (b - 1) * step >= size) {
        b--;
    }
    *lo = a;
    *hi = b;
}

/* plain, depthwise (groups = in_c) and grouped convolution, zero padding: the taps that
 * fall on the padding are skipped (their (x + in_offset) is 0) */
void ne_conv2d(const ne_conv_t *p, const int8_t *x, int8_t *y)
{
    const int32_t in_h = p->in_h, in_w = p->in_w, k_h = p->k_h, k_w = p->k_w;
    const int32_t dil_h = p->dil_h, dil_w = p->dil_w, in_offset = p->in_offset;
    const int32_t cin_g = p->in_c / p->groups;
    const int32_t cout_g = p->out_c / p->groups;
    const int32_t taps = k_h * k_w, plane = in_h * in_w;
    int32_t oc, oy, ox, ic, ky, kx, ky_lo, ky_hi, kx_lo, kx_hi;
    for (oc = 0; oc < p->out_c; oc++) {
        const int8_t *w = p->weight + oc * cin_g * taps;
        const int8_t *xg = x + (oc / cout_g) * cin_g * plane;
        const int32_t bias = p->bias[oc], mult = p->mult[oc], shift = p->shift[oc];
        int8_t *yc = y + oc * p->out_h * p->out_w;
        for (oy = 0; oy < p->out_h; oy++) {
            const int32_t iy0 = oy * p->stride_h - p->pad_h;
            ne_tap_range(iy0, dil_h, k_h, in_h, &ky_lo, &ky_hi);
            for (ox = 0; ox < p->out_w; ox++) {
                const int32_t ix0 = ox * p->stride_w - p->pad_w;
                int32_t acc = bias;
                ne_tap_range(ix0, dil_w, k_w, in_w, &kx_lo, &kx_hi);
                if (cin_g == 1) {   /* depthwise: one channel, the taps innermost */
                    for (ky = ky_lo; ky < ky_hi; ky++) {
                        const int8_t *xr = xg + (iy0 + ky * dil_h) * in_w + ix0;
                        const int8_t *wr = w + ky * k_w;
                        for (kx = kx_lo; kx < kx_hi; kx++) {
                            acc += ((int32_t)xr[kx * dil_w] + in_offset) * (int32_t)wr[kx];
                        }
                    }
                } else {            /* channels innermost: a 1x1 conv is one loop */
                    for (ky = ky_lo; ky < ky_hi; ky++) {
                        const int8_t *xr = xg + (iy0 + ky * dil_h) * in_w + ix0;
                        const int8_t *wr = w + ky * k_w;
                        for (kx = kx_lo; kx < kx_hi; kx++) {
                            const int8_t *xi = xr + kx * dil_w;
                            const int8_t *wi = wr + kx;
                            for (ic = 0; ic < cin_g; ic++) {
                                acc += ((int32_t)xi[ic * plane] + in_offset)
                                       * (int32_t)wi[ic * taps];
                            }
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
    const int32_t n_in = p->n_in, in_offset = p->in_offset;
    int32_t o, i;
    for (o = 0; o < p->n_out; o++) {
        const int8_t *w = p->weight + o * n_in;
        int32_t acc = p->bias[o];
        for (i = 0; i < n_in; i++) {
            acc += ((int32_t)x[i] + in_offset) * (int32_t)w[i];
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

#if NE_USE_MUL
/* TFLite's int8 mul: (a - za)(b - zb) in int32, rescaled to the output */
void ne_mul(const ne_mul_t *p, const int8_t *a, const int8_t *b, int8_t *y)
{
    int32_t o, i;
    for (o = 0; o < p->outer; o++) {
        const int8_t *ao = a + o * p->inner;
        const int8_t *bo = b + o * p->b_outer_stride;
        int8_t *yo = y + o * p->inner;
        for (i = 0; i < p->inner; i++) {
            const int32_t prod = ((int32_t)ao[i] + p->in1_offset)
                                 * ((int32_t)bo[i * p->b_step] + p->in2_offset);
            const int32_t out = ne_requantize(prod, p->mult, p->shift) + p->out_offset;
            yo[i] = (int8_t)ne_clamp_i32(out, p->act_min, p->act_max);
        }
    }
}
#endif

#if NE_USE_CONCAT
/* one input of a concatenation along the channels, requantised to the output's scale and
 * zero point (TFLM's int8 requantize) into its block of the output */
void ne_concat(const ne_concat_t *p, const int8_t *x, int8_t *y)
{
    int32_t i;
    for (i = 0; i < p->n; i++) {
        const int32_t out = ne_requantize((int32_t)x[i] + p->in_offset, p->mult, p->shift)
                            + p->out_offset;
        y[i] = (int8_t)ne_clamp_i32(out, -128, 127);
    }
}
#endif

#if NE_USE_PRELU
/* TFLite's int8 prelu: x >= 0 rescaled as it is, x < 0 times its channel's alpha first */
void ne_prelu(const ne_prelu_t *p, const int8_t *x, int8_t *y)
{
    int32_t ch, i;
    for (ch = 0; ch < p->c; ch++) {
        const int32_t alpha = p->alpha[ch];
        const int8_t *xc = x + ch * p->inner;
        int8_t *yc = y + ch * p->inner;
        for (i = 0; i < p->inner; i++) {
            const int32_t v = (int32_t)xc[i] + p->in_offset;
            const int32_t out = (v >= 0 ? ne_requantize(v, p->mult1, p->shift1)
                                        : ne_requantize(v * alpha, p->mult2, p->shift2))
                                + p->out_offset;
            yc[i] = (int8_t)ne_clamp_i32(out, -128, 127);
        }
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

#if NE_USE_LUT
/* an elementwise activation as its table of 256 outputs (built by the export from the
 * torch function at the input's and output's scales) */
void ne_lut(const ne_lut_t *p, const int8_t *x, int8_t *y)
{
    int32_t i;
    for (i = 0; i < p->n; i++) {
        y[i] = p->table[(int32_t)x[i] + 128];
    }
}
#endif
