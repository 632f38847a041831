/* Output and exit for the test harness: stdio on a host, semihosting on a Cortex-M. */
#ifndef NE_PLATFORM_H
#define NE_PLATFORM_H

#include <stdint.h>

void ne_puts(const char *s);
void ne_exit(int status);

#endif
