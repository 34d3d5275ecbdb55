/* kernjit.h: <kernjit/kernjit.h>, for programs written for 0.2.0, when this header was the
 * interface. Every public header lives in the kernjit/ folder; include <kernjit/kernjit.h>. */
#include "kernjit/kernjit.h"
