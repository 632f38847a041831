/* Host platform: the harness writes to stdout. */
#include <stdio.h>
#include <stdlib.h>

#include "ne_platform.h"

void ne_puts(const char *s)
{
    fputs(s, stdout);
}

void ne_exit(int status)
{
    fflush(stdout);
    exit(status);
}
