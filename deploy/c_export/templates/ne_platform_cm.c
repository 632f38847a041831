/* Bare-metal Cortex-M platform (QEMU mps2 boards): vector table, reset handler and Arm
 * semihosting (SYS_WRITE0, SYS_EXIT) so the harness prints through the debugger/QEMU.
 * No C library: the image links with -nostdlib and libgcc only. */
#include <stddef.h>
#include <stdint.h>

#include "ne_platform.h"

extern int main(void);
extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;

#define SYS_WRITE0 0x04
#define SYS_EXIT 0x18
#define ADP_STOPPED_APPLICATION_EXIT 0x20026 /* QEMU exits with status 0 */
#define ADP_STOPPED_RUNTIME_ERROR 0x20023    /* QEMU exits with status 1 */

static int semihost(int op, const void *arg)
{
    register int r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

void ne_puts(const char *s)
{
    semihost(SYS_WRITE0, s);
}

void ne_exit(int status)
{
    semihost(SYS_EXIT, (const void *)(uintptr_t)(status == 0 ? ADP_STOPPED_APPLICATION_EXIT
                                                              : ADP_STOPPED_RUNTIME_ERROR));
    for (;;) {
    }
}

/* the compiler may emit calls to these for loops and initialisers */
void *memset(void *d, int c, size_t n)
{
    unsigned char *p = d;
    while (n--) {
        *p++ = (unsigned char)c;
    }
    return d;
}

void *memcpy(void *d, const void *s, size_t n)
{
    unsigned char *p = d;
    const unsigned char *q = s;
    while (n--) {
        *p++ = *q++;
    }
    return d;
}

void Reset_Handler(void)
{
    uint32_t *src = &_sidata;
    uint32_t *dst = &_sdata;
    while (dst < &_edata) {
        *dst++ = *src++;
    }
    for (dst = &_sbss; dst < &_ebss;) {
        *dst++ = 0;
    }
    ne_exit(main());
}

static void Fault_Handler(void)
{
    ne_puts("neuroedge-c: FAULT\n");
    ne_exit(1);
}

/* One word of the vector table: entry 0 is the initial stack pointer (an object's
 * address), the others are handlers (functions' addresses). ISO C has no conversion
 * between object and function pointers (CMSIS's cast of the stack symbol is a GNU
 * extension, an error under -pedantic), so each entry is a union and every initialiser
 * names the member of its own type: nothing is converted. */
typedef union {
    uint32_t *stack;
    void (*handler)(void);
} ne_vector;

__attribute__((section(".isr_vector"), used)) static const ne_vector vectors[16] = {
    {.stack = &_estack},       {.handler = Reset_Handler}, {.handler = Fault_Handler},
    {.handler = Fault_Handler}, {.handler = Fault_Handler}, {.handler = Fault_Handler},
    {.handler = Fault_Handler}, {.handler = 0},             {.handler = 0},
    {.handler = 0},             {.handler = 0},             {.handler = Fault_Handler},
    {.handler = Fault_Handler}, {.handler = 0},             {.handler = Fault_Handler},
    {.handler = Fault_Handler}};
