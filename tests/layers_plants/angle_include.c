/* plant: lib/core/plant_angle_include.c */
/*
 * A planted breach for tests/check_layers.py (never built): a core file
 * that includes a higher layer's public header with angle brackets.
 * check.layers_plant_angle_include expects the check to refuse it.
 */
#include <gpushare/bench.h>
