/* Writing 8-bit images for the CLI, grayscale or RGB: PNG through libpng when kernjit was built with
 * it (an optional dependency), binary PGM/PPM otherwise or when the name ends in ".pgm"/".ppm"; and a
 * perceptual colour map (dark purple through red and orange to pale yellow) for pictures of values. */
#ifndef KJ_IMAGE_H
#define KJ_IMAGE_H

#include <stddef.h>
#include <stdint.h>

/* 1 when PNG can be written. */
int image_have_png(void);

/* Writes w x h pixels (row-major, row 0 on top) to path, as PNG when path ends in ".png" and PNG is
 * available; otherwise as PGM, to path with ".png" replaced by ".pgm" (a file named .png must be a
 * PNG). The name written goes to written (size bytes). Returns 0, or -1 with a message in err. */
int image_write_gray(const char *path, const uint8_t *pixels, unsigned w, unsigned h, char *written, size_t size,
                     char *err, size_t err_size);

/* The same in colour: pixels are w x h RGB triples. Without libpng, FILE.png becomes FILE.ppm. */
int image_write_rgb(const char *path, const uint8_t *pixels, unsigned w, unsigned h, char *written, size_t size,
                    char *err, size_t err_size);

/* The colour of t in [0, 1] (clamped) on the perceptual map, into rgb[3]. Lightness rises
 * monotonically with t, so the map reads the same in grey. */
void image_colormap(double t, uint8_t rgb[3]);

#endif
