/* Test harness: runs the int8 model on every golden input, prints each output, compares it
 * with the golden output of neuroedge's numpy reference (sim/bitwise/int8.py), and exits 0
 * only when all agree. Built with -DNE_SYSTICK (make icount) it also prints the SysTick
 * ticks of each inference, of a calibration loop of a known instruction count, and of
 * nothing (the counter's own cost, taken off both). */
#include "model.h"
#include "golden.h"
#include "ne_platform.h"

#ifdef NE_SYSTICK
/* SysTick (Armv7-M): a 24-bit down counter at the core clock (CLKSOURCE = 1). */
#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)

static void ticks_start(uint32_t *t0)
{
    SYST_RVR = 0xFFFFFFu;
    SYST_CVR = 0u;
    SYST_CSR = 5u;             /* ENABLE | CLKSOURCE (processor clock), no interrupt */
    while (SYST_CVR == 0u) {   /* until the first reload: count from a running counter */
    }
    (void)SYST_CSR;            /* reading clears COUNTFLAG */
    *t0 = SYST_CVR;
}

static int32_t ticks_since(uint32_t t0)
{
    const uint32_t t1 = SYST_CVR;
    if (SYST_CSR & (1u << 16)) {
        return -1;             /* wrapped: more than 2^24 ticks */
    }
    return (int32_t)((t0 - t1) & 0xFFFFFFu);
}

#ifdef NE_LAYER_TICKS
/* model.c calls this after each layer (make icount-layers) */
static uint32_t layer_t0;
static int32_t layer_ticks[NE_MODEL_N_LAYERS];

void harness_layer_done(int32_t layer)
{
    const uint32_t t = SYST_CVR;
    layer_ticks[layer] = (int32_t)((layer_t0 - t) & 0xFFFFFFu);
    layer_t0 = SYST_CVR;   /* this call's own instructions not in the next layer */
}
#endif

/* NE_CALIB_LOOPS iterations of SUBS + BNE: 2 instructions each */
#define NE_CALIB_LOOPS 500000u
static void calib_loop(void)
{
    uint32_t n = NE_CALIB_LOOPS;
    __asm__ volatile("1: subs %0, %0, #1\n\tbne 1b" : "+r"(n) : : "cc");
}
#endif

int main(void)
{
    int32_t n, j, bad = 0;
#ifdef NE_SYSTICK
    uint32_t t0;
    int32_t empty, calib;
    ticks_start(&t0);   /* the counter's own cost: start and read with nothing between */
    empty = ticks_since(t0);
    ticks_start(&t0);
    calib_loop();
    calib = ticks_since(t0);
    ne_puts("calibration instructions ");
    ne_put_int((int32_t)(2u * NE_CALIB_LOOPS));
    ne_puts(" ticks ");
    ne_put_int(calib);
    ne_puts(" empty ");
    ne_put_int(empty);
    ne_puts("\n");
#endif
    for (n = 0; n < NE_GOLDEN_N; n++) {
        int ok = 1;
        int32_t label = 0;
        int8_t *in = model_input();
        const int8_t *out;
        for (j = 0; j < NE_MODEL_IN_SIZE; j++) {
            in[j] = NE_GOLDEN_X[n * NE_MODEL_IN_SIZE + j];
        }
#ifdef NE_SYSTICK
        ticks_start(&t0);
#ifdef NE_LAYER_TICKS
        layer_t0 = t0;
#endif
#endif
        model_invoke();
#ifdef NE_SYSTICK
        {
            const int32_t ticks = ticks_since(t0);
            ne_puts("ticks ");
            ne_put_int(n);
            ne_puts(" ");
            ne_put_int(ticks);
            ne_puts("\n");
        }
#endif
#ifdef NE_LAYER_TICKS
        ne_puts("layer ticks");
        for (j = 0; j < NE_MODEL_N_LAYERS; j++) {
            ne_puts(" ");
            ne_put_int(layer_ticks[j]);
        }
        ne_puts("\n");
#endif
        out = model_output();
        for (j = 1; j < NE_MODEL_OUT_SIZE; j++) {
            if (out[j] > out[label]) {
                label = j;
            }
        }
        ne_puts("y ");
        ne_put_int(n);
        ne_puts(" label ");
        ne_put_int(label);
        ne_puts(" scores");
        for (j = 0; j < NE_MODEL_OUT_SIZE; j++) {
            ne_puts(" ");
            ne_put_int(out[j]);
            ok &= out[j] == NE_GOLDEN_Y[n * NE_MODEL_OUT_SIZE + j];
        }
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
