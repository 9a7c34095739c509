/*
 * Reports in a build without cairo (lib/CMakeLists.txt picks this file
 * when cairo is not found): no figures and no load-curve plots; the tables,
 * summaries, load_curve.csv, HTML and the recommendation are written as
 * usual.
 */
#include <stddef.h>

#include "gpushare/gpushare.h"
#include "gpushare/report.h"
#include "report_internal.h"

int gpushare_report_plot_render(const struct rplot *p, struct gpushare_buf *png, struct gpushare_buf *svg)
{
	(void)p;
	(void)png;
	(void)svg;
	return gpushare_fail(GPUSHARE_E_UNSUPPORTED, "gpushare was built without cairo: no plots");
}

int gpushare_report_plot_title(const struct rplot *p, char *out, size_t len, double *width, double *max_width)
{
	(void)p;
	(void)out;
	(void)len;
	(void)width;
	(void)max_width;
	return gpushare_fail(GPUSHARE_E_UNSUPPORTED, "gpushare was built without cairo: no plots");
}

void gpushare_report_plot_done(void)
{
}

int gpushare_report_figures(const struct gpushare_report *r, struct report_figure **figs, size_t *n)
{
	(void)r;
	*figs = NULL;
	*n = 0;
	return GPUSHARE_OK;
}

void gpushare_report_figures_free(struct report_figure *figs, size_t n)
{
	(void)figs;
	(void)n;
}
