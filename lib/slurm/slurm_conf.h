/*
 * The node's GPUs as the site's gres.conf lists them (lib/slurm/slurm_conf.c).
 *
 * In the prolog and epilog, CUDA_VISIBLE_DEVICES and SLURM_JOB_GPUS hold
 * Slurm's indices of the job's GPUs: positions in the node's gres.conf File=
 * list, not NVML indices. With File=/dev/nvidia[0,2], Slurm's GPU 1 is
 * /dev/nvidia2, the GPU whose minor number is 2, whatever NVML's order.
 */
#ifndef GPUSHARE_SLURM_CONF_H
#define GPUSHARE_SLURM_CONF_H

#include <stddef.h>

#define GPUSHARE_GRES_MAX_FILES 128

/* A GPU of the node's gres.conf, in Slurm's order. */
struct gpushare_gres_gpu {
	unsigned minor;    /* its device file /dev/nvidiaN: N (a MIG device's: its parent's) */
	int gi;            /* a MIG device (a MultipleFiles= line): its GPU instance id, from
			    * the driver's /proc/driver/nvidia-caps/mig-minors; -1 a whole
			    * GPU; -2 a MIG device whose instance the driver does not name */
};

/* The GPUs of the gpu lines for this node (NodeName= naming SLURMD_NODENAME,
 * else the host name, or no NodeName=) in the gres.conf beside SLURM_CONF,
 * in Slurm's order, its Include lines followed (gpushare_slurm_conf_read):
 * each device file of a File= list (/dev/nvidiaN), each MultipleFiles= line
 * one MIG device (its parent /dev/nvidiaN and its /dev/nvidia-caps/
 * nvidia-capC, which the driver's mig-minors file names "gpuN/giG/access C";
 * GPUSHARE_MIG_MINORS replaces that file's path). *n 0 without SLURM_CONF,
 * gres.conf or a gpu line for the node (AutoDetect); an error when gres.conf
 * or a file it includes cannot be read. */
int gpushare_gres_gpus(struct gpushare_gres_gpu *gpus, size_t max, size_t *n);

#endif
