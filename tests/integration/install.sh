#!/bin/sh
# install.sh - 'make install' into a temporary PREFIX (and with DESTDIR), then
# every installed program, template, query and doc used from another
# directory with a PATH that has no build tree on it; the man page and the
# bash completion; 'make uninstall'; 'make deps' installs what the tests need.
cd "$(dirname "$0")/../.." || exit 1
REPO=$PWD
T=$(mktemp -d "${TMPDIR:-/tmp}/ccsweep-install.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
ok() { echo "PASS: install: $1"; }
bad() { echo "FAIL: install: $1"; }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

P=$T/prefix
if ! make --no-print-directory -s install PREFIX="$P" >"$T/install.log" 2>&1; then
    bad "make install PREFIX=$P failed: $(tail -3 "$T/install.log")"
    exit 0
fi
D=$P/share/ccsweep
missing=""
for f in bin/ccsweep bin/ccsweep-profiler bin/ccsweep-groundtruth bin/ccsweep-nccl-import \
    share/ccsweep/catalog/models.yaml share/ccsweep/catalog/hardware.yaml \
    share/ccsweep/catalog/evolutions.yaml share/ccsweep/sweeps/default.yaml \
    share/ccsweep/sweeps/paper.yaml share/ccsweep/calibration/ci-cpu.csv \
    share/ccsweep/calibration/ci-cpu.yaml share/ccsweep/queries/comm_share.sql \
    share/ccsweep/validate-configs.txt share/ccsweep/slurm/ccsweep.sbatch \
    share/doc/ccsweep/README.md share/doc/ccsweep/sweeps.md share/doc/ccsweep/results.md \
    share/doc/ccsweep/slurm.md share/man/man1/ccsweep.1 share/bash-completion/completions/ccsweep; do
    [ -s "$P/$f" ] || missing="$missing $f"
done
check "PREFIX install has every documented file (missing:$missing)" "[ -z '$missing' ]"
nq=$(ls "$REPO"/tools/queries/*.sql | wc -l)
check "every canned query is installed ($(ls "$D"/queries/*.sql | wc -l) of $nq)" \
    "[ $(ls "$D"/queries/*.sql | wc -l) -eq $nq ]"

# Use it from elsewhere, with only the installed bin directory and the system on PATH.
mkdir -p "$T/elsewhere"
cd "$T/elsewhere" || exit 1
SYS=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH="$P/bin:$SYS"
check "ccsweep --version from another directory" "ccsweep --version >/dev/null"
# the installed catalog is the one read: an entry only it has shows up
sed -i '0,/^models:/s//models:\n  - {name: only-installed, layers: 2, hidden: 64, heads: 4, vocab: 100}/' "$D/catalog/models.yaml"
check "ccsweep list reads the installed catalog" "ccsweep list models | grep -q '^only-installed '"
ccsweep project --model gpt3-175b --hw a100-80g --devices 64 --tp 8 --pp 8 --gbs 64 >"$T/p.txt" 2>&1
check "ccsweep project" "grep -q '^  iteration' '$T/p.txt'"
ccsweep project --catalog "$D/calibration/ci-cpu.yaml" --hw ci-cpu --dtype fp32 \
    --calib "$D/calibration/ci-cpu.csv" --layers 1 --hidden 512 --heads 8 --seq 128 --vocab 1024 --gbs 1 \
    >"$T/c.txt" 2>&1
check "ccsweep project --calib with the installed profile and hardware overlay" "grep -q '^  iteration' '$T/c.txt'"
cat >small.yaml <<EOF
name: installed
models: [gpt3-175b, llama3-70b]
hardware: [a100-80g, h100-sxm]
plan: {devices: [256, 1024], tp: [4, 8], pp: [1, 8], seq: 2048, gbs: 1536, recompute: selective}
EOF
mpirun --oversubscribe -n 2 ccsweep run small.yaml --db small.db --quiet >"$T/r.txt" 2>&1
check "mpirun ccsweep run into a database" "grep -q 'run 1 complete' '$T/r.txt'"
n=$(sqlite3 small.db <"$D/queries/best_plan.sql" 2>&1 | wc -l)
check "an installed query runs against it ($n lines)" "[ $n -gt 1 ]"
ccsweep report --db small.db --out rep >"$T/rep.txt" 2>&1
check "ccsweep report" "[ -s rep/report.md ]"
ccsweep-nccl-import "$REPO/tests/data/all_reduce_perf_8gpu.log" >nccl.csv 2>"$T/n.txt"
check "ccsweep-nccl-import" "grep -q '^allreduce,' nccl.csv"
mpirun --oversubscribe -n 2 ccsweep-profiler --budget 3 --max-gemm-flops 1e6 --max-msg 65536 \
    --out prof.csv --hw-out prof.yaml --quiet >"$T/prof.txt" 2>&1
check "ccsweep-profiler writes a profile" "grep -q '^gemm,' prof.csv && grep -q '^hardware:' prof.yaml"
echo "tiny 128 4 64 1 2 1" >gt.txt
mpirun --oversubscribe -n 2 ccsweep-groundtruth --config gt.txt --rounds 1 --out gt.csv --quiet \
    >"$T/gt.txt" 2>&1
check "ccsweep-groundtruth measures a configuration" "grep -q '^tiny,' gt.csv"
check "the installed Slurm template names the installed binary" \
    "grep -q '^default_bin=$P/bin/ccsweep\$' '$D/slurm/ccsweep.sbatch'"
# the template outside Slurm, launched with mpirun: no ./ccsweep here, no build tree on PATH
CCSWEEP_LAUNCH=mpirun CCSWEEP_DB="$T/elsewhere/sb.db" CCSWEEP_LOCAL_DIR="$T" \
    bash "$D/slurm/ccsweep.sbatch" small.yaml --quiet >"$T/sb.txt" 2>&1
check "the installed Slurm template runs the installed ccsweep" \
    "[ \"\$(sqlite3 sb.db 'select status from runs')\" = complete ] && grep -q '$P/bin/ccsweep run' '$T/sb.txt'"

# man page: found through MANPATH, renders without warnings, documents every option
check "man -w finds ccsweep(1) under the prefix" "[ \"\$(MANPATH=$P/share/man man -w ccsweep 2>/dev/null)\" = '$P/share/man/man1/ccsweep.1' ]"
warn=$(MANWIDTH=80 man --warnings -l "$P/share/man/man1/ccsweep.1" 2>&1 >/dev/null | head -3)
check "man page renders without warnings ($warn)" "[ -z \"\$warn\" ]"
undoc=""
for sub in project list run validate report search compare catalog; do
    for o in $(ccsweep $sub --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u); do
        grep -q -- "$(echo "$o" | sed 's/-/\\\\-/g')" "$P/share/man/man1/ccsweep.1" || undoc="$undoc $sub:$o"
    done
done
check "the man page names every option of every subcommand's --help (missing:$undoc)" "[ -z '$undoc' ]"

# bash completion: commands, options from --help, catalog names from list
comp() { # WORDS... : completions of the last word
    bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _ccsweep; printf "%s\n" "${COMPREPLY[@]}"' \
        comp "$P/share/bash-completion/completions/ccsweep" "$@"
}
check "completion: 'ccsweep pro' -> project" "[ \"\$(comp ccsweep pro)\" = project ]"
check "completion: 'ccsweep project --mod' -> --model --model-config" "[ \"\$(comp ccsweep project --mod | tr '\\n' ' ')\" = '--model --model-config ' ]"
check "completion: 'ccsweep project --hw h' -> h100-sxm, h800, h200" \
    "[ \"\$(comp ccsweep project --hw h | tr '\n' ' ')\" = 'h100-sxm h800 h200 ' ]"
check "completion: 'ccsweep list ev' -> evolutions" "[ \"\$(comp ccsweep list ev)\" = evolutions ]"
check "completion: 'ccsweep run --res' -> --resume" "[ \"\$(comp ccsweep run --res)\" = --resume ]"
cd "$REPO" || exit 1
export PATH="$SYS:$PATH"

# DESTDIR: files land under it, paths inside name the final PREFIX
if make --no-print-directory -s install DESTDIR="$T/stage" PREFIX=/opt/ccs >"$T/d.log" 2>&1; then
    check "DESTDIR install stages under DESTDIR" \
        "[ -x '$T/stage/opt/ccs/bin/ccsweep' ] && [ -s '$T/stage/opt/ccs/share/man/man1/ccsweep.1' ] && [ ! -e /opt/ccs/bin/ccsweep ]"
    check "DESTDIR install: the template names /opt/ccs/bin/ccsweep, not the staging path" \
        "grep -q '^default_bin=/opt/ccs/bin/ccsweep\$' '$T/stage/opt/ccs/share/ccsweep/slurm/ccsweep.sbatch'"
    check "a staged binary finds its staged catalog (relocatable)" \
        "'$T/stage/opt/ccs/bin/ccsweep' list hardware | grep -q '^h100-sxm'"
else
    bad "make install DESTDIR=... failed: $(tail -3 "$T/d.log")"
fi
make --no-print-directory -s uninstall PREFIX="$P" >/dev/null 2>&1
left=$(find "$P" -type f | head -3)
check "make uninstall removes every installed file (left: $left)" "[ -z '$left' ]"

# make deps covers everything make check uses, the Slurm tests included; CI installs the same
deps=$(make --no-print-directory -n deps | sed -n 's/.*deps.sh //p')
check "make deps installs slurm-wlm and munge" \
    "echo ' $deps ' | grep -q ' slurm-wlm ' && echo ' $deps ' | grep -q ' munge '"
check "CI installs the Makefile's packages (make deps)" "grep -q '^make deps\$' .ci/run"
# the project stands alone: no file cites a design document outside it
refs=$(grep -rlE 'DESIGN( section| [0-9]|\.md)' README.md Makefile src include tools sweeps results tests \
    2>/dev/null | grep -v '^tests/integration/install.sh$' | tr '\n' ' ')
check "no file cites a design document outside the repository ($refs)" "[ -z '$refs' ]"
exit 0
