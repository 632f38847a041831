/* neuroedge packed-binary kernels (see ne_kernels.h for the bit layout). */
#include "ne_kernels.h"

int32_t ne_popcount(ne_word_t x)
{
#if defined(__GNUC__)
    /* GCC/clang: POPCNT on x86 with -mpopcnt; on ARMv7-M a call to libgcc's SWAR
     * __popcountsi2 (what the cortex-m4 profile prices). */
#if NE_WORD_BITS == 64
    return (int32_t)__builtin_popcountll(x);
#else
    return (int32_t)__builtin_popcountl((unsigned long)x);
#endif
#else
    /* portable SWAR fallback */
#if NE_WORD_BITS == 64
    x = x - ((x >> 1) & UINT64_C(0x5555555555555555));
    x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
    x = (x + (x >> 4)) & UINT64_C(0x0F0F0F0F0F0F0F0F);
    return (int32_t)((x * UINT64_C(0x0101010101010101)) >> 56);
#else
    x = x - ((x >> 1) & UINT32_C(0x55555555));
    x = (x & UINT32_C(0x33333333)) + ((x >> 2) & UINT32_C(0x33333333));
    x = (x + (x >> 4)) & UINT32_C(0x0F0F0F0F);
    return (int32_t)((x * UINT32_C(0x01010101)) >> 24);
#endif
#endif
}

/* +/-1 dot product of two packed K-bit rows: agreements - disagreements = K - 2 * differ. */
int32_t ne_dot(const ne_word_t *x, const ne_word_t *w, int32_t words, int32_t k)
{
    int32_t s = 0;
    int32_t v;
    for (v = 0; v < words; v++) {
        s += ne_popcount(x[v] ^ w[v]);
    }
    return k - 2 * s;
}

/* y bit j = 1 (+1) iff dot(x, w_j) >= thr[j]  (ties give +1, as BitwiseDevice.sign). */
void ne_sign_layer(const ne_word_t *x, const ne_word_t *w, const int32_t *thr,
                   int32_t k, int32_t m, ne_word_t *y)
{
    const int32_t words = NE_WORDS(k);
    int32_t j;
    for (j = 0; j < NE_WORDS(m); j++) {
        y[j] = 0;
    }
    for (j = 0; j < m; j++) {
        if (ne_dot(x, w + (int32_t)j * words, words, k) >= thr[j]) {
            y[j / NE_WORD_BITS] |= (ne_word_t)1 << (j % NE_WORD_BITS);
        }
    }
}

/* scores[c] = dot(x, w_c) + bias[c] */
void ne_scores_layer(const ne_word_t *x, const ne_word_t *w, const int32_t *bias,
                     int32_t k, int32_t c, int32_t *scores)
{
    const int32_t words = NE_WORDS(k);
    int32_t j;
    for (j = 0; j < c; j++) {
        scores[j] = ne_dot(x, w + (int32_t)j * words, words, k) + bias[j];
    }
}

/* Tsetlin-machine clauses: clause c fires iff x has a 1 under every bit of pos[c] and a 0
 * under every bit of neg[c]; a firing clause adds weight[c] to votes[cls[c]]. Padding bits
 * of pos/neg are 0, so the 1s that ~x has there never count. */
void ne_clause_layer(const ne_word_t *x, const ne_word_t *pos, const ne_word_t *neg,
                     const int32_t *cls, const int32_t *weight, int32_t k, int32_t n_clauses,
                     int32_t n_classes, int32_t *votes)
{
    const int32_t words = NE_WORDS(k);
    int32_t c, v;
    for (c = 0; c < n_classes; c++) {
        votes[c] = 0;
    }
    for (c = 0; c < n_clauses; c++) {
        const ne_word_t *p = pos + (int32_t)c * words;
        const ne_word_t *q = neg + (int32_t)c * words;
        ne_word_t viol = 0;
        for (v = 0; v < words; v++) {
            viol |= p[v] & (ne_word_t)~x[v];
            viol |= q[v] & x[v];
        }
        if (viol == 0) {
            votes[cls[c]] += weight[c];
        }
    }
}

/* index of the largest score; the lowest index wins ties (as numpy.argmax) */
int32_t ne_argmax(const int32_t *scores, int32_t n)
{
    int32_t best = 0;
    int32_t j;
    for (j = 1; j < n; j++) {
        if (scores[j] > scores[best]) {
            best = j;
        }
    }
    return best;
}
