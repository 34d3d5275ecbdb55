/* kernjit-version.h: <kernjit/version.h>, for programs written for 0.2.0, when this header lay here. */
#include "kernjit/version.h"
