/* plant: lib/core/plant_macro_include.c */
/*
 * A planted breach for tests/check_layers.py (never built): an include
 * through a macro, which the check cannot follow and so refuses.
 * check.layers_plant_macro_include expects the check to refuse it.
 */
#define PLANT_HEADER "gpushare/bench.h"
#include PLANT_HEADER
