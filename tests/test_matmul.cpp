#include "tests/support/reference.h"
