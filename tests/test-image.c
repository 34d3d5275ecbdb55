/* The CLI's image writer (cli/image.c): a colour PNG read back pixel for pixel, the PPM/PGM forms,
 * and the colour map (its lightness rises with t, so pictures read the same in grey). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "image.h"
#include "plot.h"

#ifdef KJ_HAVE_PNG
#include <png.h>
#endif

static char dir[] = "/tmp/kernjit-image-XXXXXX";

static double lightness(const uint8_t c[3]) { return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]; }

static void test_colormap_rises(void **state) {
    (void)state;
    uint8_t prev[3], c[3];
    image_colormap(0, prev);
    for (int i = 1; i <= 1000; i++) {
        image_colormap(i / 1000.0, c);
        assert_true(lightness(c) >= lightness(prev) - 0.5); /* rounding only */
        memcpy(prev, c, 3);
    }
    uint8_t lo[3], hi[3];
    image_colormap(-5, lo);
    image_colormap(NAN, c);
    assert_memory_equal(lo, c, 3);
    image_colormap(0, c);
    assert_memory_equal(lo, c, 3);
    image_colormap(7, hi);
    image_colormap(1, c);
    assert_memory_equal(hi, c, 3);
    assert_true(lightness(hi) - lightness(lo) > 200); /* dark to light */
}

static uint8_t *pattern(unsigned w, unsigned h) {
    uint8_t *p = malloc((size_t)w * h * 3);
    for (size_t i = 0; i < (size_t)w * h * 3; i++) p[i] = (uint8_t)(i * 37 + 11);
    return p;
}

static void test_ppm(void **state) {
    (void)state;
    unsigned w = 7, h = 5;
    uint8_t *p = pattern(w, h);
    char path[128], written[256], err[256];
    snprintf(path, sizeof path, "%s/x.ppm", dir);
    assert_int_equal(image_write_rgb(path, p, w, h, written, sizeof written, err, sizeof err), 0);
    assert_string_equal(written, path);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char magic[3] = "";
    unsigned fw = 0, fh = 0, maxv = 0;
    assert_int_equal(fscanf(f, "%2s %u %u %u", magic, &fw, &fh, &maxv), 4);
    fgetc(f);
    assert_string_equal(magic, "P6");
    assert_int_equal(fw, w);
    assert_int_equal(fh, h);
    uint8_t back[7 * 5 * 3];
    assert_int_equal(fread(back, 1, sizeof back, f), sizeof back);
    assert_int_equal(fgetc(f), EOF);
    fclose(f);
    assert_memory_equal(back, p, sizeof back);
    /* grayscale stays P5 */
    snprintf(path, sizeof path, "%s/x.pgm", dir);
    assert_int_equal(image_write_gray(path, p, w, h, written, sizeof written, err, sizeof err), 0);
    f = fopen(path, "rb");
    assert_int_equal(fscanf(f, "%2s", magic), 1);
    fclose(f);
    assert_string_equal(magic, "P5");
    /* a folder that does not exist: an error naming the file, nothing written */
    snprintf(path, sizeof path, "%s/no/such/x.ppm", dir);
    assert_int_equal(image_write_rgb(path, p, w, h, written, sizeof written, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    free(p);
}

static void test_png_rgb(void **state) {
    (void)state;
    unsigned w = 33, h = 9;
    uint8_t *p = pattern(w, h);
    char path[128], written[256], err[256];
    snprintf(path, sizeof path, "%s/x.png", dir);
    assert_int_equal(image_write_rgb(path, p, w, h, written, sizeof written, err, sizeof err), 0);
#ifdef KJ_HAVE_PNG
    assert_string_equal(written, path);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    assert_int_equal(setjmp(png_jmpbuf(png)), 0);
    png_init_io(png, f);
    png_read_info(png, info);
    assert_int_equal(png_get_image_width(png, info), w);
    assert_int_equal(png_get_image_height(png, info), h);
    assert_int_equal(png_get_color_type(png, info), PNG_COLOR_TYPE_RGB);
    assert_int_equal(png_get_bit_depth(png, info), 8);
    uint8_t row[33 * 3];
    for (unsigned y = 0; y < h; y++) {
        png_read_row(png, row, NULL);
        assert_memory_equal(row, p + (size_t)y * w * 3, sizeof row);
    }
    png_destroy_read_struct(&png, &info, NULL);
    fclose(f);
#else
    char ppm[160];
    snprintf(ppm, sizeof ppm, "%s/x.ppm", dir);
    assert_string_equal(written, ppm); /* without libpng a .png request becomes .ppm */
#endif
    free(p);
}

#ifdef KJ_HAVE_PNG
/* Reads an RGB PNG into a malloc'd buffer. */
static uint8_t *read_png(const char *path, unsigned *w, unsigned *h) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    assert_int_equal(setjmp(png_jmpbuf(png)), 0);
    png_init_io(png, f);
    png_read_info(png, info);
    *w = png_get_image_width(png, info);
    *h = png_get_image_height(png, info);
    assert_int_equal(png_get_color_type(png, info), PNG_COLOR_TYPE_RGB);
    uint8_t *px = malloc((size_t)*w * *h * 3);
    for (unsigned y = 0; y < *h; y++) png_read_row(png, px + (size_t)y * *w * 3, NULL);
    png_destroy_read_struct(&png, &info, NULL);
    fclose(f);
    return px;
}
#endif

/* A 4 x 3 sweep with a hole: the highest cell gets the map's top colour, the lowest its bottom, the
 * hole grey, and the winner a frame; the values' range sets the scale. */
static void test_heatmap(void **state) {
    (void)state;
    const char *xs[] = {"1", "2", "4", "8"}, *ys[] = {"128", "256", "1024"};
    plot_axis x = {"COARSE_FACTOR", 4, xs}, y = {"BLOCK_SIZE", 3, ys};
    double v[12] = {100, 200, 300, 400, 500, NAN, 700, 800, 900, 1000, 1100, 1200};
    char path[128], written[256], err[256];
    snprintf(path, sizeof path, "%s/sweep.png", dir);
    assert_int_equal(plot_heatmap(path, "kernjit tune reduce OP=sum T=f32: GB/s", "GB/s", &x, &y, v, 6, written,
                                  sizeof written, err, sizeof err),
                     0);
#ifdef KJ_HAVE_PNG
    unsigned w, h;
    uint8_t *px = read_png(path, &w, &h);
    unsigned cx, cy;
#define AT(X, Y) (px + ((size_t)(Y)*w + (X)) * 3)
    uint8_t top[3], bottom[3], grey[3] = {200, 200, 200}, frame[3] = {0, 200, 255};
    image_colormap(1, top);
    image_colormap(0, bottom);
    plot_cell_origin(&x, &y, 3, 2, &cx, &cy); /* 1200: the highest */
    assert_true(cx + PLOT_CELL_W <= w && cy + PLOT_CELL_H <= h);
    assert_memory_equal(AT(cx + 3, cy + 3), top, 3);
    plot_cell_origin(&x, &y, 0, 0, &cx, &cy); /* 100: the lowest */
    assert_memory_equal(AT(cx + 3, cy + 3), bottom, 3);
    plot_cell_origin(&x, &y, 1, 1, &cx, &cy); /* the hole */
    assert_memory_equal(AT(cx + 3, cy + 3), grey, 3);
    plot_cell_origin(&x, &y, 2, 1, &cx, &cy); /* the winner, index 6 */
    assert_memory_equal(AT(cx, cy), frame, 3);
    assert_memory_equal(AT(cx + PLOT_CELL_W - 1, cy + PLOT_CELL_H - 1), frame, 3);
    uint8_t mid[3];
    image_colormap((700.0 - 100) / (1200 - 100), mid);
    assert_memory_equal(AT(cx + 3, cy + 3), mid, 3);
    plot_cell_origin(&x, &y, 3, 1, &cx, &cy); /* not the winner: no frame */
    assert_memory_not_equal(AT(cx, cy), frame, 3);
#undef AT
    free(px);
#endif
    /* nothing measured: every cell grey, still a picture */
    double none[12];
    for (int i = 0; i < 12; i++) none[i] = NAN;
    assert_int_equal(
        plot_heatmap(path, "t", "GB/s", &x, &y, none, (size_t)-1, written, sizeof written, err, sizeof err), 0);
}

/* The font has both cases: every lower-case letter has a glyph of its own, unlike its capital's and
 * every other letter's. */
static void test_font_lower_case(void **state) {
    (void)state;
    for (char c = 'a'; c <= 'z'; c++) {
        const uint8_t *g = plot_glyph(c), *upper = plot_glyph((char)(c - 'a' + 'A'));
        assert_non_null(g);
        assert_non_null(upper);
        assert_memory_not_equal(g, upper, 7);
        for (char d = 'a'; d < c; d++) assert_memory_not_equal(g, plot_glyph(d), 7);
        int lit = 0;
        for (int r = 0; r < 7; r++) lit += g[r] != 0 && (g[r] & ~0x1f) == 0;
        assert_true(lit >= 4); /* drawn, in 5 columns */
    }
    assert_null(plot_glyph(' '));
}

int main(void) {
    if (!mkdtemp(dir)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_colormap_rises),  cmocka_unit_test(test_ppm),
        cmocka_unit_test(test_png_rgb),         cmocka_unit_test(test_heatmap),
        cmocka_unit_test(test_font_lower_case),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    return failed;
}
