/* The CLI's image writer (tools/image.c): a colour PNG read back pixel for pixel, the PPM/PGM forms,
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

int main(void) {
    if (!mkdtemp(dir)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_colormap_rises),
        cmocka_unit_test(test_ppm),
        cmocka_unit_test(test_png_rgb),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    return failed;
}
