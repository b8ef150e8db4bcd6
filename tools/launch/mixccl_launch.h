/*
 * mixccl_launch: become one rank of a mixccl job started by mixcclrun, Open MPI's mpirun, Slurm's
 * srun or PyTorch's torchrun, without MPI and without passing a unique id around.
 *
 *   mixcclLaunchInfo info;
 *   mixcclComm_t comm;
 *   if (mixcclLaunchInitComm(&comm, &info, NULL) != mixcclSuccess) {
 *     fprintf(stderr, "%s\n", mixcclLaunchLastError());
 *     return 1;
 *   }
 *
 * Rank, size and local rank, first match wins:
 *   mixcclrun : MIXCCL_RANK, MIXCCL_NRANKS, MIXCCL_LOCAL_RANK, MIXCCL_LOCAL_SIZE
 *   mpirun    : OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK/_LOCAL_SIZE
 *   srun      : SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID (local size: SLURM_NTASKS_PER_NODE when it
 *               is a plain number)
 *   torchrun  : RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE
 *   none      : a single rank (rank 0 of 1)
 *
 * Rendezvous address (rank 0 hosts the bootstrap root there):
 *   1. MIXCCL_COMM_ID=host:port when set (mixcclrun always sets it).
 *   2. torchrun: MASTER_ADDR and MASTER_PORT+1. MASTER_PORT itself is taken: torchrun's own
 *      c10d/TCPStore listens on it in the agent process, so mixccl's root uses the next port.
 *   3. mpirun/srun with every rank on one host (OMPI_COMM_WORLD_LOCAL_SIZE == size, or
 *      SLURM_NNODES/SLURM_JOB_NUM_NODES == 1): rank 0 picks a free loopback port and a random
 *      secret and publishes both in a private file (mode 0600) named after the user and the job id
 *      (OMPI_MCA_ess_base_jobid / PMIX_NAMESPACE, or SLURM_JOB_ID.SLURM_STEP_ID) in $TMPDIR or /tmp;
 *      the other ranks read it. Rank 0 removes the file once all ranks have joined.
 *   4. otherwise (several hosts, no MIXCCL_COMM_ID): an error that asks for
 *      `-x MIXCCL_COMM_ID=<host of rank 0>:<port>` (mpirun) or `--export=ALL,MIXCCL_COMM_ID=...`.
 *
 * Secret: MIXCCL_COMM_SECRET (32 hex digits) when set; the file of case 3 carries a random one;
 * otherwise the library derives one from the address, which anyone who can guess the address can
 * reproduce (a weak secret: keep such jobs on trusted networks, or export MIXCCL_COMM_SECRET).
 */
#ifndef MIXCCL_LAUNCH_H_
#define MIXCCL_LAUNCH_H_

#include <stddef.h>

#include "mixccl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int rank;
  int nranks;
  int localRank;
  int localSize;        /* -1 when the launcher does not say */
  char launcher[16];    /* "mixcclrun", "mpirun", "srun", "torchrun" or "none" */
  char commId[256];     /* host:port of the rendezvous, or "" when the library picks one (1 rank) */
} mixcclLaunchInfo;

/* Fills *info from the environment (rank, size, local rank, launcher; commId only when
 * MIXCCL_COMM_ID or torchrun's MASTER_ADDR/MASTER_PORT give it). Returns 0, or -1 with a message
 * for mixcclLaunchLastError(). Does not touch the network. */
int mixcclLaunchDetect(mixcclLaunchInfo* info);

/* Detects the rank, settles the rendezvous address (and secret) as described above, exports
 * MIXCCL_COMM_ID (and MIXCCL_COMM_SECRET when it generated one) into this process's environment,
 * then calls mixcclGetUniqueId and mixcclCommInitRankConfig (config may be NULL). info may be
 * NULL. On failure returns the error and mixcclLaunchLastError() says why. */
mixcclResult_t mixcclLaunchInitComm(mixcclComm_t* comm, mixcclLaunchInfo* info,
                                    mixcclConfig_t* config);

/* The message of the last failure of this library in the calling thread ("" if none). */
const char* mixcclLaunchLastError(void);

#ifdef __cplusplus
}
#endif

#endif /* MIXCCL_LAUNCH_H_ */
