/* Planted (tests/layers_plants/shared_struct/plant_shared.h says why): a
 * pointer passed on, no member used. */
#include <stddef.h>

#include "plant_shared.h"

void plant_e(void);

void plant_e(void)
{
	struct plant_shared *p = plant_get();

	if (p != NULL)
		plant_take(p);
}
