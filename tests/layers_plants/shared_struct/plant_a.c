/* Planted (tests/layers_plants/shared_struct/plant_shared.h says why). */
#include "plant_shared.h"

void plant_a(struct plant_shared *p);

void plant_a(struct plant_shared *p)
{
	p->count++;
}
