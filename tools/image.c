#include "image.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

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

static int write_pgm(const char *path, const uint8_t *pixels, unsigned w, unsigned h, char *err, size_t err_size) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        snprintf(err, err_size, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    int ok = fprintf(f, "P5\n%u %u\n255\n", w, h) > 0 && fwrite(pixels, 1, (size_t)w * h, f) == (size_t)w * h;
    ok &= fclose(f) == 0;
    if (!ok) snprintf(err, err_size, "cannot write %s: %s", path, strerror(errno));
    return ok ? 0 : -1;
}

#ifdef KJ_HAVE_PNG
static int write_png(const char *path, const uint8_t *pixels, unsigned w, unsigned h, char *err, size_t err_size) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        snprintf(err, err_size, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_write_struct(&png, NULL);
        fclose(f);
        snprintf(err, err_size, "cannot write %s: libpng is out of memory", path);
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        fclose(f);
        snprintf(err, err_size, "cannot write %s (libpng failed)", path);
        return -1;
    }
    png_init_io(png, f);
    /* big images: fast compression matters more than the last few percent of size */
    png_set_compression_level(png, 1);
    png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (unsigned y = 0; y < h; y++) png_write_row(png, (png_const_bytep)(pixels + (size_t)y * w));
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    if (fclose(f) != 0) {
        snprintf(err, err_size, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}
#endif

int image_write_gray(const char *path, const uint8_t *pixels, unsigned w, unsigned h, char *written, size_t size,
                     char *err, size_t err_size) {
    if (ends_with(path, ".png")) {
#ifdef KJ_HAVE_PNG
        snprintf(written, size, "%s", path);
        return write_png(path, pixels, w, h, err, err_size);
#else
        size_t n = strlen(path);
        if (n + 1 > size) {
            snprintf(err, err_size, "file name too long");
            return -1;
        }
        snprintf(written, size, "%.*s.pgm", (int)(n - 4), path);
        return write_pgm(written, pixels, w, h, err, err_size);
#endif
    }
    snprintf(written, size, "%s", path);
    return write_pgm(path, pixels, w, h, err, err_size);
}
