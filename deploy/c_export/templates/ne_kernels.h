/* neuroedge packed-binary kernels: C99, stdint only, no malloc, no float.
 *
 * Bit layout (same as sim/bitwise/packing.py): element k of a K-bit row lives in word
 * k / NE_WORD_BITS at bit k % NE_WORD_BITS (LSB first); bit 1 = +1, bit 0 = -1; padding
 * bits of the last word are 0, so K - 2 * popcount(x ^ w) is the exact +/-1 dot product.
 */
#ifndef NE_KERNELS_H
#define NE_KERNELS_H

#include <stdint.h>

#include "ne_config.h" /* NE_WORD_BITS, written by the exporter */

#if NE_WORD_BITS == 64
typedef uint64_t ne_word_t;
#elif NE_WORD_BITS == 32
typedef uint32_t ne_word_t;
#else
#error "NE_WORD_BITS must be 32 or 64"
#endif

#define NE_WORDS(k) (((k) + NE_WORD_BITS - 1) / NE_WORD_BITS)

int32_t ne_popcount(ne_word_t x);
int32_t ne_dot(const ne_word_t *x, const ne_word_t *w, int32_t words, int32_t k);
void ne_sign_layer(const ne_word_t *x, const ne_word_t *w, const int32_t *thr,
                   int32_t k, int32_t m, ne_word_t *y);
void ne_scores_layer(const ne_word_t *x, const ne_word_t *w, const int32_t *bias,
                     int32_t k, int32_t c, int32_t *scores);
void ne_clause_layer(const ne_word_t *x, const ne_word_t *pos, const ne_word_t *neg,
                     const int32_t *cls, const int32_t *weight, int32_t k, int32_t n_clauses,
                     int32_t n_classes, int32_t *votes);
int32_t ne_argmax(const int32_t *scores, int32_t n);

#endif
