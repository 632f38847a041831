/* Test harness: runs the model on every golden input, prints each output, compares with
 * the golden outputs from neuroedge's BitwiseDevice, and exits 0 only when all agree. */
#include "model.h"
#include "golden.h"
#include "ne_platform.h"

int main(void)
{
    int32_t n, j, bad = 0;
    for (n = 0; n < NE_GOLDEN_N; n++) {
        int ok = 1;
        const ne_word_t *x = &NE_GOLDEN_X[(int32_t)n * NE_MODEL_IN_WORDS];
        ne_puts("y ");
        ne_put_int(n);
#if NE_MODEL_HAS_SCORES
        {
            int32_t scores[NE_MODEL_N_OUT];
            int32_t label = model_predict(x, scores);
            ne_puts(" label ");
            ne_put_int(label);
            ne_puts(" scores");
            for (j = 0; j < NE_MODEL_N_OUT; j++) {
                ne_puts(" ");
                ne_put_int(scores[j]);
                ok &= scores[j] == NE_GOLDEN_SCORES[(int32_t)n * NE_MODEL_N_OUT + j];
            }
            ok &= label == NE_GOLDEN_LABELS[n];
        }
#else
        {
            ne_word_t y[NE_WORDS(NE_MODEL_N_OUT)];
            model_forward(x, y);
            ne_puts(" bits ");
            for (j = 0; j < NE_MODEL_N_OUT; j++) {
                int bit = (int)((y[j / NE_WORD_BITS] >> (j % NE_WORD_BITS)) & 1u);
                int want = (int)((NE_GOLDEN_Y[(int32_t)n * NE_WORDS(NE_MODEL_N_OUT)
                                              + j / NE_WORD_BITS] >> (j % NE_WORD_BITS)) & 1u);
                ne_puts(bit ? "1" : "0");
                ok &= bit == want;
            }
        }
#endif
        ne_puts(ok ? " ok\n" : " MISMATCH\n");
        bad += !ok;
    }
    ne_puts("neuroedge-c: ");
    ne_put_int(NE_GOLDEN_N - bad);
    ne_puts("/");
    ne_put_int(NE_GOLDEN_N);
    ne_puts(" golden outputs match\n");
    return bad ? 1 : 0;
}
