/*
 * A planted breach for the symbol check of tests/check_layers.py: compiled
 * into an object library that nothing links (tests/CMakeLists.txt), its
 * object counted as core's, it calls a function of the bench layer through
 * a declaration of its own, which neither the includes nor an extern show.
 * check.layers_plant_upward_call expects nm to find the call.
 */
struct gpushare_bench_config;
int plant_upward_call(struct gpushare_bench_config *c);
int gpushare_bench_config_init(struct gpushare_bench_config *c);

int plant_upward_call(struct gpushare_bench_config *c)
{
	return gpushare_bench_config_init(c);
}
