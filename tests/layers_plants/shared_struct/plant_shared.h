/*
 * A planted breach for tests/check_structs.py (never built): a struct of an
 * internal header whose members four files use (plant_a.c to plant_d.c);
 * plant_e.c only passes a pointer on, which is no sharing.
 * check.structs_plant expects the check to name it with its four files.
 */
#ifndef PLANT_SHARED_H
#define PLANT_SHARED_H

struct plant_shared {
	int count;
	double sum;
};

struct plant_shared *plant_get(void);
void plant_take(struct plant_shared *p);

#endif
