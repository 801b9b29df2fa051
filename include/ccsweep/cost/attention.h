/* attention.h - achieved throughput of fused attention kernels, from
 * published kernel benchmarks (the tables in attention.c, each cited): by
 * kernel, device, head dimension, sequence length, causal mask and pass.
 * Pure; no allocation. */
#ifndef CCSWEEP_ATTENTION_H
#define CCSWEEP_ATTENTION_H

#include "ccsweep/model/hw.h"
#include "ccsweep/model/stack.h"

/* Achieved fraction of hw's 16-bit matrix peak (at the clock the benchmark
 * ran at: the caller applies hw->clock_ratio, as for GEMMs) of attention
 * kernel `kernel` (CCS_ATTN_FA2 .. CCS_ATTN_TRITON) at head dimension hd and
 * sequence length seq, causal or not, in the forward (bwd 0) or backward
 * (bwd 1) pass, FLOPs counted as the benchmarks count them: 4 s^2 h d
 * forward, 2.5 times that backward, halved under a causal mask.
 * Devices: the measured table of the device hw->attn_ref names, else the
 * newest measured device's efficiency scaled by the GEMM efficiencies of
 * the two (the kernel keeps its share of what the device's matrix units
 * reach). Head dimensions outside the measured range take the nearest
 * measured one, sequences below it the shortest; beyond the longest, a
 * causal curve keeps its last measured growth up to the unmasked curve, an
 * unmasked one its last value. Where only forward + backward was measured,
 * the figure is split into its passes at the kernel's forward / backward
 * ratio. Always in (0, 1]. */
double attn_kernel_eff(const ccs_hw *hw, int kernel, double hd, double seq, int causal, int bwd);

#endif
