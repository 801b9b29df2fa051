/* opmodel.h - operator models fitted (GSL) to a calibration profile: measured
 * operator timings of one hardware, one curve per (op, dtype[, group, level]).
 * The object is immutable after opmodel_load and may be shared by threads.
 *
 * Profile CSV (format also in sweeps/README.md): op,dtype,m,n,k,bytes,group,level,time_s,reps
 * with '#' comment lines; a comment "# key: value" is kept as metadata (the
 * profiler records host, cpu, blas, mpi, date and profiling_wall_s). Columns
 * by op:
 *   gemm, bmm    C[m x n] = A[m x k] B[k x n]; group = batch count (bmm, >= 1);
 *                bytes = operand traffic (informational)
 *   attention    fused attention forward: m = n = sequence, k = head dim,
 *                group = batch x heads
 *   elementwise, layernorm, softmax
 *                m x n = rows x row length, k = FLOPs per element as
 *                regions.h counts them (1 add/mask, 8 GeLU, ...), bytes =
 *                memory traffic; k/bytes-per-element identifies the kernel class
 *   allreduce, allgather, reducescatter, p2p
 *                bytes = buffer (nccl-tests "size"), group = ranks,
 *                level = intra | inter; m, n, k unused
 * time_s is the time of one call (median of reps), reps how many were timed.
 *
 * Work measures: bytes for memory-bound ops and collectives; for GEMMs a
 * shape-aware work w = 2mnk*batch + l0*batch + lA*m*k*batch + lB*k*n*batch
 * + lC*m*n*batch, in FLOP equivalents, whose coefficients (per-call cost and
 * per-element costs of the A, B and C operands) are a weighted least-squares
 * fit over the profile's GEMMs: a skinny GEMM moves more operand elements per
 * FLOP than a square one and is charged for it. */
#ifndef CCSWEEP_OPMODEL_H
#define CCSWEEP_OPMODEL_H

#include "ccsweep/cost/opscale.h"
#include "ccsweep/cost/regions.h"

#include <stdio.h>

typedef struct ccs_opmodel ccs_opmodel;

/* Parse the profile CSV at path (the format above; a regular file of at most
 * CCS_MAX_PROFILE_BYTES, 256 MiB, util/file.h) and fit its curves.
 * Returns a new model the caller frees with opmodel_free, or NULL with err
 * naming the file, line and field. Turns GSL's abort-on-error handler off. */
ccs_opmodel *opmodel_load(const char *path, ccs_err *err);

/* The same from a profile already in memory (text of len bytes); name stands
 * for the file in messages. */
ccs_opmodel *opmodel_parse(const char *text, size_t len, const char *name, ccs_err *err);

/* Free a model; NULL is a no-op. */
void opmodel_free(ccs_opmodel *om);

/* Time of one occurrence of op from the measured curves, scaled by s (NULL:
 * the base hardware) to a generation (compute-bound by f_flops, memory-bound by f_mem, collectives
 * by f_intra / f_inter and the plan's bandwidth factor, latency parts by f_lat). lo/hi are the
 * curve's residual band (one RMS residual, widened with the distance of an extrapolation); extrap
 * is work / largest measured work when op lies beyond the measured range, else 0. Returns 0 and
 * fills out, or -1 when the profile has no curve for op's kind/dtype (the caller then uses the
 * synthetic curve). No allocation. */
int opmodel_eval(const ccs_opmodel *om, const ccs_opscale *s, const ccs_op *op, ccs_optime *out);

/* SHA-256 (64 hex digits) of the profile text it was parsed from. */
const char *opmodel_sha256(const ccs_opmodel *om);
/* Value of a "# key: value" comment of the profile, or NULL. Borrowed. */
const char *opmodel_meta(const ccs_opmodel *om, const char *key);

/* Rows used and curves fitted. */
int opmodel_rows(const ccs_opmodel *om);
int opmodel_curves(const ccs_opmodel *om);

/* Largest measured work of the curve that would serve op (FLOP equivalents
 * or bytes), or 0 when none would. */
double opmodel_max_work(const ccs_opmodel *om, const ccs_op *op);

/* Where the cost of operators of this kind comes from: 1 when the profile has
 * a curve that serves them (compute kinds: same kind and dtype; collectives:
 * same kind at that level, level 0 intra-node or 1 inter-node, any dtype and
 * group size), 0 when they get the synthetic curve. om NULL: 0. */
int opmodel_measured(const ccs_opmodel *om, int kind, int dtype, int level);

/* The shape coefficients of the GEMM curve for dtype (see the work measure
 * above): per call, and per element of the A, B and C operands, in FLOP
 * equivalents. Returns 0, or -1 when the profile has no GEMM of that dtype.
 * All three operand terms 0 means the fit could not tell operand traffic
 * from FLOPs (too few or too noisy GEMM timings) and uses FLOPs alone. */
int opmodel_gemm_terms(const ccs_opmodel *om, int dtype, double *per_call, double *a, double *b,
                       double *c);

/* One line per curve: key, points, measured range, band, and for GEMM curves
 * the shape coefficients with the residual of a FLOPs-only fit beside the
 * shape-aware one. */
void opmodel_describe(const ccs_opmodel *om, FILE *f);

#endif
