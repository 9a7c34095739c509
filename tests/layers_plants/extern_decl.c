/* plant: lib/core/plant_extern_decl.c */
/*
 * A planted breach for tests/check_layers.py (never built): a core file
 * that declares a function of the bench layer by extern, so no include
 * shows the upward call. check.layers_plant_extern expects the check to
 * refuse it.
 */
struct gpushare_bench_config;
extern int gpushare_bench_config_init(struct gpushare_bench_config *c);
