/* Output and exit for the test harness: stdio on a host, semihosting on a Cortex-M. */
#ifndef NE_PLATFORM_H
#define NE_PLATFORM_H

#include <stdint.h>

void ne_puts(const char *s);
void ne_exit(int status);

/* v in decimal through ne_puts: the one number printer of both test harnesses */
static inline void ne_put_int(int32_t v)
{
    char buf[12];
    int i = 11;
    uint32_t u = v < 0 ? (uint32_t)0 - (uint32_t)v : (uint32_t)v;
    buf[i] = '\0';
    do {
        buf[--i] = (char)('0' + u % 10u);
        u /= 10u;
    } while (u);
    if (v < 0) {
        buf[--i] = '-';
    }
    ne_puts(buf + i);
}

#endif
