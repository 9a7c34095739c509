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

/* The minor numbers of the device files (/dev/nvidiaN: N) of the Name=gpu
 * lines for this node (NodeName= naming SLURMD_NODENAME, else the host
 * name, or no NodeName=) in the gres.conf beside SLURM_CONF, in Slurm's
 * order, its Include lines followed (gpushare_slurm_conf_read): minor[0..*n).
 * *n 0 without SLURM_CONF, gres.conf or a File= for the node (AutoDetect);
 * an error when gres.conf or a file it includes cannot be read. */
int gpushare_gres_gpu_minors(unsigned *minor, size_t max, size_t *n);

#endif
