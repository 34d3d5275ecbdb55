/* Integer expressions over macro values, for the metadata's `require` lines:
 * `TILE_DIM % BLOCK_ROWS == 0`, `BLOCK_SIZE * COARSE_FACTOR <= 8192`. C operators and precedence:
 * || && == != < <= > >= + - * / % unary - ! and parentheses; 64-bit signed arithmetic. */
#ifndef KJ_EXPR_H
#define KJ_EXPR_H

#include <stddef.h>
#include <stdint.h>

/* Resolves an identifier to its value; returns 0 on success, -1 when unknown or not an integer. */
typedef int (*kj__expr_lookup)(const char *name, size_t len, int64_t *value, void *user);

/* Evaluates text. Returns 0 with *value set, or -1 with a message in err (division by zero, an
 * unknown name, a syntax error). */
int kj__expr_eval(const char *text, kj__expr_lookup lookup, void *user, int64_t *value, char *err, size_t err_size);

#endif
