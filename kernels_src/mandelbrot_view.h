/* mandelbrot_view.h: the window and the image size of a Mandelbrot image, which the host fills
 * (src/ops/mandelbrot/) and passes by value to the kernels (mandelbrot.cu). One definition for both
 * sides: NVRTC and the C compiler include this file. Pixel (x, y) is c = (x0 + x dx, y1 - y dy). */
#ifndef KJ_MANDELBROT_VIEW_H
#define KJ_MANDELBROT_VIEW_H

typedef struct kj_view {
    float x0, y1, dx, dy;
    unsigned w, h;
} kj_view;

#endif
