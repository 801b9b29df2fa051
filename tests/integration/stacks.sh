#!/bin/sh
# stacks.sh - the software stack as a sweep axis (plan.stack): catalog names
# and inline entries, one result row per stack, the default's keys and values
# those of a spec without the axis, best plans ranked within one stack, the
# run's inputs recording each stack, and errors naming file, line and field.
cd "$(dirname "$0")/../.." || exit 1
B=./ccsweep
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ok() { echo "PASS: $1"; }
bad() { echo "FAIL: $1"; }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }
q() { sqlite3 "$@"; }

cat >"$T/base.yaml" <<'YAML'
name: stacks
models: [llama3-8b, gpt3-175b]
hardware: [a100-80g, h100-sxm]
plan:
  devices: 64
  tp: [1, 8]
  pp: [1, 8]
  mbs: 1
  zero: [0, 3]
  flash_attn: true
  dp_overlap: bucketed
YAML
{ cat "$T/base.yaml"; cat <<'YAML'
  stack:
    - megatron-core
    - llm-foundry
    - name: my-fsdp
      attention_kernel: fa2
      grad_dtype: bf16
      comm_units: 16
YAML
} >"$T/stk.yaml"
mpirun --oversubscribe -n 2 $B run "$T/base.yaml" --db "$T/base.db" --quiet >/dev/null 2>"$T/err"; rc0=$?
mpirun --oversubscribe -n 2 $B run "$T/stk.yaml" --db "$T/stk.db" --quiet >/dev/null 2>"$T/err"; rc1=$?
check "runs with and without plan.stack exit 0 ($rc0 $rc1: $(head -c 200 "$T/err"))" "[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ]"
n0=$(q "$T/base.db" "SELECT count(*) FROM results")
check "three stacks: three times the rows, one per stack" \
    "[ \"\$(q '$T/stk.db' 'SELECT stack, count(*) FROM results_view GROUP BY stack ORDER BY stack')\" = 'llm-foundry|$n0
megatron-core|$n0
my-fsdp|$n0' ]"
q "$T/stk.db" "ATTACH '$T/base.db' AS b;
  SELECT count(*) FROM results_view r JOIN b.results_view s ON s.key = r.key
  WHERE r.stack = 'megatron-core' AND r.t_iter IS s.t_iter AND r.mem_total IS s.mem_total
    AND r.status IS s.status" >"$T/same"
check "megatron-core rows keep the keys and values of the spec without the axis ($(cat "$T/same") of $n0)" "[ \"\$(cat '$T/same')\" = $n0 ]"
check "the stacks give different iteration times" \
    "[ \"\$(q '$T/stk.db' \"SELECT count(DISTINCT t_iter) FROM results_view WHERE status = 'ok' GROUP BY model, hardware, tp, pp, zero LIMIT 1\")\" = 3 ]"
check "plans store the default as NULL, the others by name" \
    "[ \"\$(q '$T/stk.db' 'SELECT count(*) FROM plans WHERE stack IS NULL; SELECT count(DISTINCT stack) FROM plans')\" = \"\$(q '$T/stk.db' 'SELECT count(*) / 3 FROM plans')
2\" ]"
check "best plans: one per model, hardware and stack" \
    "[ \"\$(q '$T/stk.db' 'SELECT count(*), count(DISTINCT stack) FROM best_plan')\" = '12|3' ]"
check "comm_share names the stack" \
    "[ \"\$(q '$T/stk.db' 'SELECT count(DISTINCT stack) FROM comm_share')\" = 3 ]"
check "the run records each stack's content hash" \
    "[ \"\$(q '$T/stk.db' \"SELECT group_concat(name) FROM (SELECT name FROM run_inputs WHERE kind = 'stack' ORDER BY name)\")\" = 'llm-foundry,megatron-core,my-fsdp' ]"

# errors: file, line and field
{ cat "$T/base.yaml"; printf '  stack: [llm-foundry, nosuch]\n'; } >"$T/bad1.yaml"
$B run "$T/bad1.yaml" --db "$T/bad1.db" >/dev/null 2>"$T/err"; rc=$?
check "an unknown stack: exit 1 naming file, line and field, no database" \
    "[ $rc -eq 1 ] && grep -q \"bad1.yaml:12:.*plan.stack.*unknown stack 'nosuch'\" '$T/err' && [ ! -e '$T/bad1.db' ]"
{ cat "$T/base.yaml"; printf '  stack: [llm-foundry, llm-foundry]\n'; } >"$T/bad2.yaml"
$B run "$T/bad2.yaml" --db "$T/bad2.db" >/dev/null 2>"$T/err"; rc=$?
check "a stack listed twice: exit 1" "[ $rc -eq 1 ] && grep -q 'listed twice' '$T/err'"
# bad_field N FIELD VALUE WHAT [PATTERN]: an inline stack whose FIELD is VALUE
# exits 1 naming the file's line 14 (the field's) and PATTERN (the field)
bad_field() {
    { cat "$T/base.yaml"; printf '  stack:\n    - name: x\n      %s: %s\n' "$2" "$3"; } >"$T/bad$1.yaml"
    $B run "$T/bad$1.yaml" --db "$T/bad$1.db" >/dev/null 2>"$T/err"; rc=$?
    check "an inline stack with $4: exit 1 naming it" \
        "[ $rc -eq 1 ] && grep -q 'bad$1.yaml:14' '$T/err' && grep -q '${5:-$2}' '$T/err'"
}
bad_field 3 comm_units many "a bad field"

# dropout: false (a stack whose recipes train GPT-style blocks without dropout)
{ cat "$T/base.yaml"; printf '  stack:\n    - megatron-core\n    - name: nodrop\n      dropout: false\n'; } >"$T/nd.yaml"
mpirun --oversubscribe -n 2 $B run "$T/nd.yaml" --db "$T/nd.db" --quiet >/dev/null 2>"$T/err"; rc=$?
# pairs DB STACK COND: plans of DB under megatron-core (a) and under STACK (b)
# alike but for the stack, both projected (ok or oom), for which COND holds
pairs() { q "$1" "SELECT count(*) FROM results_view a JOIN results_view b
  ON b.model = a.model AND b.hardware = a.hardware AND b.tp = a.tp AND b.pp = a.pp AND b.zero = a.zero
  WHERE a.stack = 'megatron-core' AND b.stack = '$2' AND a.mem_total IS NOT NULL
    AND b.mem_total IS NOT NULL AND $3"; }
pair() { pairs "$T/nd.db" nodrop "$1"; }
check "dropout: false: exit 0 ($rc); GPT-3's rows hold less memory ($(pair "a.model = 'gpt3-175b' AND b.mem_total < a.mem_total") of $(pair "a.model = 'gpt3-175b'")), Llama 3's the same ($(pair "a.model = 'llama3-8b' AND b.mem_total = a.mem_total AND b.t_iter = a.t_iter") of $(pair "a.model = 'llama3-8b'"))" \
    "[ $rc -eq 0 ] && [ \$(pair \"a.model = 'gpt3-175b' AND b.mem_total < a.mem_total\") -gt 0 ] &&
     [ \$(pair \"a.model = 'gpt3-175b' AND b.mem_total < a.mem_total\") = \$(pair \"a.model = 'gpt3-175b'\") ] &&
     [ \$(pair \"a.model = 'llama3-8b' AND b.mem_total = a.mem_total AND b.t_iter = a.t_iter\") = \$(pair \"a.model = 'llama3-8b'\") ]"
bad_field 4 dropout sometimes "dropout neither true nor false"

# the loss: fused over 16-bit logits (less traffic than Megatron's fp32 one),
# and training metrics on every micro-batch's logits (more)
{ cat "$T/base.yaml"; printf '  stack:\n    - megatron-core\n    - name: fused\n      loss_kernel: fused\n    - name: metrics\n      logit_metrics: 2\n    - name: bgrad\n      bias_grad: separate\n    - name: eager\n      elementwise: eager\n'; } >"$T/loss.yaml"
mpirun --oversubscribe -n 2 $B run "$T/loss.yaml" --db "$T/loss.db" --quiet >/dev/null 2>"$T/err"; rc=$?
lpair() { pairs "$T/loss.db" "$1" "a.status = 'ok' AND b.status = 'ok' AND $2"; }
nl=$(lpair fused 1)
# (the compute changes; an iteration bound by a link's busy time keeps its length)
check "loss_kernel fused: exit 0 ($rc); every plan computes faster ($(lpair fused 'b.t_compute < a.t_compute AND b.t_iter <= a.t_iter') of $nl)" \
    "[ $rc -eq 0 ] && [ $nl -gt 0 ] && [ \$(lpair fused 'b.t_compute < a.t_compute AND b.t_iter <= a.t_iter') = $nl ]"
check "logit_metrics 2: every plan computes slower ($(lpair metrics 'b.t_compute > a.t_compute AND b.t_iter >= a.t_iter') of $(lpair metrics 1)), memory never less" \
    "[ \$(lpair metrics 1) -gt 0 ] && [ \$(lpair metrics 'b.t_compute > a.t_compute AND b.t_iter >= a.t_iter AND b.mem_total >= a.mem_total') = \$(lpair metrics 1) ]"
# separate bias-gradient kernels: GPT-3's (biased) plans compute slower, Llama 3's the same
check "bias_grad separate: gpt3-175b computes slower ($(lpair bgrad "a.model = 'gpt3-175b' AND b.t_compute > a.t_compute") of $(lpair bgrad "a.model = 'gpt3-175b'")), llama3-8b the same ($(lpair bgrad "a.model = 'llama3-8b' AND b.t_iter = a.t_iter") of $(lpair bgrad "a.model = 'llama3-8b'"))" \
    "[ \$(lpair bgrad \"a.model = 'gpt3-175b'\") -gt 0 ] && [ \$(lpair bgrad \"a.model = 'gpt3-175b' AND b.t_compute > a.t_compute\") = \$(lpair bgrad \"a.model = 'gpt3-175b'\") ] &&
     [ \$(lpair bgrad \"a.model = 'llama3-8b'\") -gt 0 ] && [ \$(lpair bgrad \"a.model = 'llama3-8b' AND b.t_iter = a.t_iter\") = \$(lpair bgrad \"a.model = 'llama3-8b'\") ]"
# eager element-wise kernels: every plan of both models computes slower, and
# Llama 3's (RMSNorm's fp32 copies, SwiGLU, repeated key-value heads) keeps
# more memory where activations are kept
check "elementwise eager: every plan computes slower ($(lpair eager 'b.t_compute > a.t_compute') of $(lpair eager 1)), llama3-8b's never less memory, more without full recompute ($(lpair eager "a.model = 'llama3-8b' AND b.mem_total > a.mem_total"))" \
    "[ \$(lpair eager 1) -gt 0 ] && [ \$(lpair eager 'b.t_compute > a.t_compute AND b.t_iter >= a.t_iter') = \$(lpair eager 1) ] &&
     [ \$(lpair eager \"a.model = 'llama3-8b' AND b.mem_total < a.mem_total\") = 0 ] && [ \$(lpair eager \"a.model = 'llama3-8b' AND b.mem_total > a.mem_total\") -gt 0 ]"
# selective: op: llama3-8b's selective plans compute slower and hold less
# memory (the per-op policy recomputes what Megatron's keeps); its other plans
# and GPT-3's (biased blocks: Megatron's selective) are unchanged
{ cat "$T/base.yaml"; printf '  recompute: [selective, full]\n  stack:\n    - megatron-core\n    - name: sacop\n      selective: op\n'; } >"$T/sac.yaml"
mpirun --oversubscribe -n 2 $B run "$T/sac.yaml" --db "$T/sac.db" --quiet >/dev/null 2>"$T/err" || sed 's/^/  /' "$T/err"
sacp() { pairs "$T/sac.db" sacop "a.status = 'ok' AND b.status = 'ok' AND a.recompute = b.recompute AND a.model = '$1' AND a.recompute = '$2'${3:+ AND $3}"; }
check "selective op: llama3-8b's selective plans compute slower, less memory ($(sacp llama3-8b selective 'b.t_compute > a.t_compute AND b.mem_total < a.mem_total') of $(sacp llama3-8b selective)); the rest unchanged" \
    "[ \$(sacp llama3-8b selective) -gt 0 ] && [ \$(sacp llama3-8b selective 'b.t_compute > a.t_compute AND b.mem_total < a.mem_total') = \$(sacp llama3-8b selective) ] &&
     [ \$(sacp llama3-8b full 'b.t_iter = a.t_iter') = \$(sacp llama3-8b full) ] && [ \$(sacp gpt3-175b selective 'b.t_iter = a.t_iter') = \$(sacp gpt3-175b selective) ]"
bad_field 10 selective attention "selective neither core nor op"
bad_field 9 elementwise unfused "elementwise neither fused nor eager"
bad_field 5 loss_kernel flash "an unknown loss_kernel"
bad_field 7 bias_grad maybe "bias_grad neither fused nor separate"
bad_field 6 logit_metrics 1.5 "a fractional logit_metrics" 'logit_metrics.*expected an integer.*1\.5'
# zero3_units counts blocks held whole: a fraction of one is no count
bad_field 8 zero3_units 1.5 "a fractional zero3_units" 'zero3_units.*expected an integer.*1\.5'

# search under a stack: the JSON names it, and its best plan is costed under it
$B search --model llama3-8b --hw h100-sxm --devices 64 --seq 8192 --top 1 --stack pytorch-fsdp1 --json >"$T/s1.json"; rc1=$?
$B search --model llama3-8b --hw h100-sxm --devices 64 --seq 8192 --top 1 --json >"$T/s0.json"; rc0=$?
j() { q :memory: "SELECT json_extract(readfile('$1'), '\$.$2')"; }
check "search --stack: exit 0, the JSON names the stack ($rc0 $rc1)" \
    "[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && [ \"\$(j '$T/s1.json' stack) \$(j '$T/s1.json' 'top[0].stack') \$(j '$T/s0.json' stack)\" = 'pytorch-fsdp1 pytorch-fsdp1 megatron-core' ]"
check "search --stack: its best plan differs in time from the default's" \
    "[ \"\$(j '$T/s1.json' 'top[0].t_iter')\" != \"\$(j '$T/s0.json' 'top[0].t_iter')\" ]"
$B search --model llama3-8b --hw h100-sxm --devices 64 --stack nope >/dev/null 2>"$T/err"; rc=$?
check "search --stack nope: exit 1 naming it" "[ $rc -eq 1 ] && grep -q \"unknown stack 'nope'\" '$T/err'"
exit 0
