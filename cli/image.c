#include "image.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kernjit.h" /* kj_message_format */

#ifdef KJ_HAVE_PNG
#include <setjmp.h>

#include <png.h>
#endif

int image_have_png(void) {
#ifdef KJ_HAVE_PNG
    return 1;
#else
    return 0;
#endif
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* path opened for writing; NULL with the reason in err. */
static FILE *create(const char *path, char *err, size_t err_size) {
    FILE *f = fopen(path, "wb");
    if (!f) kj_message_format(err, err_size, "cannot create %s: %s", path, strerror(errno));
    return f;
}

/* P5 (grayscale) or P6 (RGB) */
static int write_pnm(const char *path, const uint8_t *pixels, unsigned w, unsigned h, int channels, char *err,
                     size_t err_size) {
    FILE *f = create(path, err, err_size);
    if (!f) return -1;
    size_t bytes = (size_t)w * h * (size_t)channels;
    int ok = fprintf(f, "P%d\n%u %u\n255\n", channels == 3 ? 6 : 5, w, h) > 0 && fwrite(pixels, 1, bytes, f) == bytes;
    ok &= fclose(f) == 0;
    if (!ok) kj_message_format(err, err_size, "cannot write %s: %s", path, strerror(errno));
    return ok ? 0 : -1;
}

#ifdef KJ_HAVE_PNG
static int write_png(const char *path, const uint8_t *pixels, unsigned w, unsigned h, int channels, char *err,
                     size_t err_size) {
    FILE *f = create(path, err, err_size);
    if (!f) return -1;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_write_struct(&png, NULL);
        fclose(f);
        kj_message_format(err, err_size, "cannot write %s: libpng is out of memory", path);
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        fclose(f);
        kj_message_format(err, err_size, "cannot write %s (libpng failed)", path);
        return -1;
    }
    png_init_io(png, f);
    /* big images: fast compression matters more than the last few percent of size */
    png_set_compression_level(png, 1);
    png_set_IHDR(png, info, w, h, 8, channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (unsigned y = 0; y < h; y++) png_write_row(png, (png_const_bytep)(pixels + (size_t)y * w * (size_t)channels));
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    if (fclose(f) != 0) {
        kj_message_format(err, err_size, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}
#endif

static int write_image(const char *path, const uint8_t *pixels, unsigned w, unsigned h, int channels, char *written,
                       size_t size, char *err, size_t err_size) {
    if (ends_with(path, ".png")) {
#ifdef KJ_HAVE_PNG
        snprintf(written, size, "%s", path);
        return write_png(path, pixels, w, h, channels, err, err_size);
#else
        size_t n = strlen(path);
        if (n + 1 > size) {
            snprintf(err, err_size, "file name too long");
            return -1;
        }
        snprintf(written, size, "%.*s.%s", (int)(n - 4), path, channels == 3 ? "ppm" : "pgm");
        return write_pnm(written, pixels, w, h, channels, err, err_size);
#endif
    }
    snprintf(written, size, "%s", path);
    return write_pnm(path, pixels, w, h, channels, err, err_size);
}

int image_write_gray(const char *path, const uint8_t *pixels, unsigned w, unsigned h, char *written, size_t size,
                     char *err, size_t err_size) {
    return write_image(path, pixels, w, h, 1, written, size, err, err_size);
}

int image_write_rgb(const char *path, const uint8_t *pixels, unsigned w, unsigned h, char *written, size_t size,
                    char *err, size_t err_size) {
    return write_image(path, pixels, w, h, 3, written, size, err, err_size);
}

void image_colormap(double t, uint8_t rgb[3]) {
    /* control points of a dark-to-light map through purple, red and orange; linear in between */
    static const double stops[][4] = {
        {0.00, 0, 0, 4},      {0.15, 40, 11, 84},   {0.35, 120, 28, 109},  {0.55, 187, 55, 84},
        {0.72, 237, 105, 37}, {0.87, 251, 180, 26}, {1.00, 252, 255, 164},
    };
    if (!(t > 0)) t = 0; /* NaN too */
    if (t > 1) t = 1;
    size_t i = 1;
    while (i < sizeof stops / sizeof stops[0] - 1 && t > stops[i][0]) i++;
    double f = (t - stops[i - 1][0]) / (stops[i][0] - stops[i - 1][0]);
    for (int c = 0; c < 3; c++)
        rgb[c] = (uint8_t)(stops[i - 1][c + 1] + f * (stops[i][c + 1] - stops[i - 1][c + 1]) + 0.5);
}
