#ifndef BUFFER_H
#define BUFFER_H

#include <stddef.h>

struct buffer;

/* Create an empty buffer. */
struct buffer *buffer_new(void);

static inline size_t buffer_cap(size_t n) {
    return n * 2;
}

#endif
