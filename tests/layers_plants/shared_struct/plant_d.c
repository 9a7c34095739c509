/* Planted (tests/layers_plants/shared_struct/plant_shared.h says why). */
#include "plant_shared.h"

void plant_d(struct plant_shared *p);

void plant_d(struct plant_shared *p)
{
	struct plant_shared q[2] = { { 0, 0 } };

	q[1].sum = p->sum;
	*p = q[1];
}
