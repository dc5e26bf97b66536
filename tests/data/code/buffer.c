#include <stdlib.h>
#include <string.h>

#define BUFFER_SIZE 64

/* A growable byte buffer. */
struct buffer {
    char *data;
    size_t length;
};

typedef enum { MODE_FAST, MODE_SLOW } mode_t;

static int counter = 0;

/* Create an empty buffer. */
struct buffer *buffer_new(void) {
    struct buffer *b = malloc(sizeof *b);
    b->data = NULL;
    b->length = 0;
    return b;
}

// Append bytes.
int buffer_append(struct buffer *b, const char *bytes, size_t n) {
    char *grown = realloc(b->data, b->length + n);
    if (!grown) {
        return -1;
    }
    memcpy(grown + b->length, bytes, n);
    b->data = grown;
    b->length += n;
    return 0;
}
