#include "plot.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"

/* 5 x 7 glyphs, one byte a row, bit 4 leftmost. Lower case is lower case ("GB/s", "f32"): its
 * tails (g j p q y) stay inside the 7 rows, which have no room below the line. */
static const struct glyph {
    char c;
    uint8_t rows[7];
} font[] = {
    {'0', {0x0e, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0e}},
    {'1', {0x04, 0x0c, 0x04, 0x04, 0x04, 0x04, 0x0e}},
    {'2', {0x0e, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1f}},
    {'3', {0x1e, 0x01, 0x01, 0x0e, 0x01, 0x01, 0x1e}},
    {'4', {0x02, 0x06, 0x0a, 0x12, 0x1f, 0x02, 0x02}},
    {'5', {0x1f, 0x10, 0x1e, 0x01, 0x01, 0x11, 0x0e}},
    {'6', {0x0e, 0x10, 0x10, 0x1e, 0x11, 0x11, 0x0e}},
    {'7', {0x1f, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
    {'8', {0x0e, 0x11, 0x11, 0x0e, 0x11, 0x11, 0x0e}},
    {'9', {0x0e, 0x11, 0x11, 0x0f, 0x01, 0x01, 0x0e}},
    {'A', {0x0e, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11}},
    {'B', {0x1e, 0x11, 0x11, 0x1e, 0x11, 0x11, 0x1e}},
    {'C', {0x0e, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0e}},
    {'D', {0x1e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1e}},
    {'E', {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x1f}},
    {'F', {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x10}},
    {'G', {0x0e, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0f}},
    {'H', {0x11, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11}},
    {'I', {0x0e, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e}},
    {'J', {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0c}},
    {'K', {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}},
    {'L', {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1f}},
    {'M', {0x11, 0x1b, 0x15, 0x15, 0x11, 0x11, 0x11}},
    {'N', {0x11, 0x19, 0x15, 0x13, 0x11, 0x11, 0x11}},
    {'O', {0x0e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e}},
    {'P', {0x1e, 0x11, 0x11, 0x1e, 0x10, 0x10, 0x10}},
    {'Q', {0x0e, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0d}},
    {'R', {0x1e, 0x11, 0x11, 0x1e, 0x14, 0x12, 0x11}},
    {'S', {0x0f, 0x10, 0x10, 0x0e, 0x01, 0x01, 0x1e}},
    {'T', {0x1f, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}},
    {'U', {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e}},
    {'V', {0x11, 0x11, 0x11, 0x11, 0x11, 0x0a, 0x04}},
    {'W', {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0a}},
    {'X', {0x11, 0x11, 0x0a, 0x04, 0x0a, 0x11, 0x11}},
    {'Y', {0x11, 0x11, 0x0a, 0x04, 0x04, 0x04, 0x04}},
    {'Z', {0x1f, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1f}},
    {'a', {0x00, 0x00, 0x0e, 0x01, 0x0f, 0x11, 0x0f}},
    {'b', {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1e}},
    {'c', {0x00, 0x00, 0x0e, 0x10, 0x10, 0x11, 0x0e}},
    {'d', {0x01, 0x01, 0x0d, 0x13, 0x11, 0x11, 0x0f}},
    {'e', {0x00, 0x00, 0x0e, 0x11, 0x1f, 0x10, 0x0e}},
    {'f', {0x06, 0x09, 0x08, 0x1c, 0x08, 0x08, 0x08}},
    {'g', {0x00, 0x0f, 0x11, 0x11, 0x0f, 0x01, 0x0e}},
    {'h', {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11}},
    {'i', {0x04, 0x00, 0x0c, 0x04, 0x04, 0x04, 0x0e}},
    {'j', {0x02, 0x00, 0x06, 0x02, 0x02, 0x12, 0x0c}},
    {'k', {0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12}},
    {'l', {0x0c, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e}},
    {'m', {0x00, 0x00, 0x1a, 0x15, 0x15, 0x11, 0x11}},
    {'n', {0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11}},
    {'o', {0x00, 0x00, 0x0e, 0x11, 0x11, 0x11, 0x0e}},
    {'p', {0x00, 0x00, 0x1e, 0x11, 0x1e, 0x10, 0x10}},
    {'q', {0x00, 0x00, 0x0d, 0x13, 0x0f, 0x01, 0x01}},
    {'r', {0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10}},
    {'s', {0x00, 0x00, 0x0e, 0x10, 0x0e, 0x01, 0x1e}},
    {'t', {0x08, 0x08, 0x1c, 0x08, 0x08, 0x09, 0x06}},
    {'u', {0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0d}},
    {'v', {0x00, 0x00, 0x11, 0x11, 0x11, 0x0a, 0x04}},
    {'w', {0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0a}},
    {'x', {0x00, 0x00, 0x11, 0x0a, 0x04, 0x0a, 0x11}},
    {'y', {0x00, 0x00, 0x11, 0x11, 0x0f, 0x01, 0x0e}},
    {'z', {0x00, 0x00, 0x1f, 0x02, 0x04, 0x08, 0x1f}},
    {'.', {0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x0c}},
    {',', {0x00, 0x00, 0x00, 0x00, 0x0c, 0x04, 0x08}},
    {'/', {0x01, 0x01, 0x02, 0x04, 0x08, 0x10, 0x10}},
    {'=', {0x00, 0x00, 0x1f, 0x00, 0x1f, 0x00, 0x00}},
    {'_', {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1f}},
    {'-', {0x00, 0x00, 0x00, 0x1f, 0x00, 0x00, 0x00}},
    {':', {0x00, 0x0c, 0x0c, 0x00, 0x0c, 0x0c, 0x00}},
    {'(', {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02}},
    {')', {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08}},
    {'%', {0x19, 0x19, 0x02, 0x04, 0x08, 0x13, 0x13}},
    {'*', {0x00, 0x04, 0x15, 0x0e, 0x15, 0x04, 0x00}},
    {'^', {0x04, 0x0a, 0x11, 0x00, 0x00, 0x00, 0x00}},
};

enum { GLYPH_W = 6, GLYPH_H = 9, MARGIN = 10, SCALE_W = 16 };

typedef struct canvas {
    uint8_t *px;
    unsigned w, h;
} canvas;

static void fill(canvas *c, unsigned x0, unsigned y0, unsigned w, unsigned h, const uint8_t rgb[3]) {
    for (unsigned y = y0; y < y0 + h && y < c->h; y++)
        for (unsigned x = x0; x < x0 + w && x < c->w; x++) memcpy(c->px + ((size_t)y * c->w + x) * 3, rgb, 3);
}

const uint8_t *plot_glyph(char ch) {
    for (size_t i = 0; i < sizeof font / sizeof font[0]; i++)
        if (font[i].c == ch) return font[i].rows;
    return NULL; /* a space, or a character the font lacks: left blank */
}

static void text(canvas *c, unsigned x, unsigned y, const char *s, const uint8_t rgb[3]) {
    for (; *s; s++, x += GLYPH_W) {
        const uint8_t *g = plot_glyph(*s);
        for (unsigned r = 0; g && r < 7; r++)
            for (unsigned b = 0; b < 5; b++)
                if (g[r] & (0x10 >> b)) fill(c, x + b, y + r, 1, 1, rgb);
    }
}

static unsigned text_w(const char *s) { return (unsigned)strlen(s) * GLYPH_W; }

static unsigned label_w(const plot_axis *a) {
    unsigned w = 0;
    for (size_t i = 0; i < a->count; i++)
        if (text_w(a->values[i]) > w) w = text_w(a->values[i]);
    return w;
}

/* the grid's top-left corner: room for the title and the x axis's name above, the y labels left */
static void grid_origin(const plot_axis *x, const plot_axis *y, unsigned *gx, unsigned *gy) {
    (void)x;
    unsigned left = label_w(y);
    if (text_w(y->name) > left) left = text_w(y->name);
    *gx = MARGIN + left + MARGIN;
    *gy = MARGIN + 2 * GLYPH_H + MARGIN;
}

void plot_cell_origin(const plot_axis *x, const plot_axis *y, size_t col, size_t row, unsigned *px, unsigned *py) {
    unsigned gx, gy;
    grid_origin(x, y, &gx, &gy);
    *px = gx + (unsigned)col * PLOT_CELL_W;
    *py = gy + (unsigned)row * PLOT_CELL_H;
}

static void value_text(double v, char *buf, size_t size) {
    if (isnan(v)) snprintf(buf, size, "-");
    else if (fabs(v) >= 100) snprintf(buf, size, "%.0f", v);
    else snprintf(buf, size, "%.3g", v);
}

int plot_heatmap(const char *path, const char *title, const char *unit, const plot_axis *x, const plot_axis *y,
                 const double *values, size_t best, char *written, size_t size, char *err, size_t err_size) {
    static const uint8_t white[3] = {255, 255, 255}, black[3] = {0, 0, 0}, grey[3] = {200, 200, 200},
                         mark[3] = {0, 200, 255};
    size_t cells = x->count * y->count;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < cells; i++)
        if (!isnan(values[i])) {
            if (values[i] < lo) lo = values[i];
            if (values[i] > hi) hi = values[i];
        }
    if (!(hi >= lo)) lo = hi = 0; /* nothing measured: every cell grey */
    unsigned gx, gy;
    grid_origin(x, y, &gx, &gy);
    char scale_hi[32], scale_lo[32];
    value_text(hi, scale_hi, sizeof scale_hi);
    value_text(lo, scale_lo, sizeof scale_lo);
    unsigned grid_w = (unsigned)x->count * PLOT_CELL_W, grid_h = (unsigned)y->count * PLOT_CELL_H;
    unsigned scale_x = gx + grid_w + 2 * MARGIN;
    unsigned right = scale_x + SCALE_W + MARGIN + text_w(unit);
    if (scale_x + SCALE_W + MARGIN + text_w(scale_hi) > right) right = scale_x + SCALE_W + MARGIN + text_w(scale_hi);
    canvas c = {NULL, right + MARGIN, gy + grid_h + GLYPH_H + 2 * MARGIN};
    if (text_w(title) + 2 * MARGIN > c.w) c.w = text_w(title) + 2 * MARGIN;
    if (!(c.px = malloc((size_t)c.w * c.h * 3))) {
        snprintf(err, err_size, "out of memory for a %u x %u picture", c.w, c.h);
        return -1;
    }
    fill(&c, 0, 0, c.w, c.h, white);
    text(&c, MARGIN, MARGIN, title, black);
    text(&c, gx, MARGIN + GLYPH_H + 2, x->name, black);
    text(&c, MARGIN, gy - GLYPH_H, y->name, black);
    for (size_t col = 0; col < x->count; col++) /* x values under the grid */
        text(&c, gx + (unsigned)col * PLOT_CELL_W + (PLOT_CELL_W - text_w(x->values[col])) / 2, gy + grid_h + 4,
             x->values[col], black);
    for (size_t row = 0; row < y->count; row++) {
        unsigned cy = gy + (unsigned)row * PLOT_CELL_H;
        text(&c, gx - MARGIN - text_w(y->values[row]), cy + (PLOT_CELL_H - 7) / 2, y->values[row], black);
        for (size_t col = 0; col < x->count; col++) {
            double v = values[row * x->count + col];
            uint8_t rgb[3];
            if (isnan(v)) memcpy(rgb, grey, 3);
            else image_colormap(hi > lo ? (v - lo) / (hi - lo) : 1.0, rgb);
            unsigned cx = gx + (unsigned)col * PLOT_CELL_W;
            fill(&c, cx, cy, PLOT_CELL_W, PLOT_CELL_H, rgb);
            char label[32];
            value_text(v, label, sizeof label);
            /* dark text on light cells, light on dark */
            double light = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2];
            text(&c, cx + (PLOT_CELL_W - text_w(label)) / 2, cy + (PLOT_CELL_H - 7) / 2, label,
                 light > 110 ? black : white);
            if (row * x->count + col == best) { /* the winner: a 2-pixel frame inside the cell */
                fill(&c, cx, cy, PLOT_CELL_W, 2, mark);
                fill(&c, cx, cy + PLOT_CELL_H - 2, PLOT_CELL_W, 2, mark);
                fill(&c, cx, cy, 2, PLOT_CELL_H, mark);
                fill(&c, cx + PLOT_CELL_W - 2, cy, 2, PLOT_CELL_H, mark);
            }
        }
    }
    /* the scale: the colour map from bottom (lowest) to top (highest), with both ends' values */
    for (unsigned i = 0; i < grid_h; i++) {
        uint8_t rgb[3];
        image_colormap(1.0 - (double)i / (grid_h > 1 ? grid_h - 1 : 1), rgb);
        fill(&c, scale_x, gy + i, SCALE_W, 1, rgb);
    }
    text(&c, scale_x + SCALE_W + 4, gy, scale_hi, black);
    text(&c, scale_x + SCALE_W + 4, gy + grid_h - 7, scale_lo, black);
    text(&c, scale_x + SCALE_W + 4, gy + grid_h / 2 - 3, unit, black);
    int rc = image_write_rgb(path, c.px, c.w, c.h, written, size, err, err_size);
    free(c.px);
    return rc;
}
