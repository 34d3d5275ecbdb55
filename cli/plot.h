/* Heat maps for the CLI (`kernjit tune --plot`): a grid of cells coloured by value on image.h's
 * colour map, with the axes' names and values, each cell's value, the winner outlined, and a scale;
 * written as PNG (PPM without libpng) with a small built-in bitmap font, so no font is needed. */
#ifndef KJ_PLOT_H
#define KJ_PLOT_H

#include <stddef.h>
#include <stdint.h>

typedef struct plot_axis {
    const char *name; /* "BLOCK_SIZE" */
    size_t count;
    const char *const *values; /* count labels, in order */
} plot_axis;

/* values: y->count rows of x->count cells (row-major), NaN where there is no value (drawn grey and
 * marked "-"); best: the winner's index in values (outlined), or (size_t)-1. unit names the values
 * ("GB/s"). The name written goes to written. Returns 0, or -1 with a message in err. */
int plot_heatmap(const char *path, const char *title, const char *unit, const plot_axis *x, const plot_axis *y,
                 const double *values, size_t best, char *written, size_t size, char *err, size_t err_size);

/* Geometry, for tests: the top-left pixel of cell (col, row) and the cell's width and height. */
void plot_cell_origin(const plot_axis *x, const plot_axis *y, size_t col, size_t row, unsigned *px, unsigned *py);
enum { PLOT_CELL_W = 56, PLOT_CELL_H = 28 };
/* The font, for tests: the 7 rows (5 bits each, bit 4 leftmost) of a character, or NULL for one
 * drawn blank (a space, or a character the font lacks). */
const uint8_t *plot_glyph(char c);

#endif
