#!/usr/bin/env bash
# The hardware check, on a machine with an NVIDIA GPU, CUDA's nvcc and Nsight Compute (ncu):
# builds hw/kernels.cu and hw/chase.cu for sm_90, runs every case of hw/cases.txt once under
# ncu collecting the L1 counters, and runs the pointer-chasing micro-benchmarks.
#
#   hw/run.sh [OUT_DIR]        (default: $OUT, else hw/out)
#
# Writes to OUT_DIR: counters.csv (one row per case; `warpscope hwcheck` reads it),
# chase.csv (hw/chase.cu's measurements), ncu-raw.txt (ncu's own CSV, for re-parsing),
# kernels.sass (the machine code the counters came from) and log.txt.
# Needs nothing from the network. Run from the repository root.
set -u
out=${1:-${OUT:-hw/out}}
mkdir -p "$out"
log="$out/log.txt"
: >"$log"
say() { echo "$*" | tee -a "$log"; }
bin=$(mktemp -d)

say "== $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | tee -a "$log"
nvcc --version 2>&1 | tail -2 | tee -a "$log"
ncu --version 2>&1 | tail -1 | tee -a "$log"

say "== build"
nvcc -arch=sm_90 -O3 -o "$bin/kernels" hw/kernels.cu 2>&1 | tee -a "$log"
nvcc -arch=sm_90 -O3 -o "$bin/chase" hw/chase.cu 2>&1 | tee -a "$log"
[ -x "$bin/kernels" ] || { say "build failed"; exit 1; }
cuobjdump --dump-sass "$bin/kernels" >"$out/kernels.sass" 2>&1

say "== micro-benchmarks"
if [ -x "$bin/chase" ]; then
    timeout 180 "$bin/chase" >"$out/chase.csv" 2>>"$log" || say "chase failed: $?"
fi

say "== counters"
# The L1 counters per kernel; those this ncu does not know are left out (a name it does not
# know makes it refuse the whole list).
wanted=(
    l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
    l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
    l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum
    l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum
    l1tex__t_requests_pipe_lsu_mem_global_op_st.sum
    l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum
    l1tex__t_sectors_pipe_lsu_mem_global_op_st_lookup_hit.sum
    l1tex__t_sectors_pipe_lsu_mem_global_op_st_lookup_miss.sum
    l1tex__t_sector_hit_rate.pct
    l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct
    smsp__sass_inst_executed_op_global_ld.sum
    smsp__sass_inst_executed_op_global_st.sum
    l1tex__m_xbar2l1tex_read_sectors_mem_global_op_ld.sum
    l1tex__m_xbar2l1tex_read_sectors.sum
    launch__grid_size
    launch__block_size
    gpu__time_duration.sum
)
ncu --query-metrics --chip gh100 >"$bin/known.txt" 2>&1
metrics=()
for m in "${wanted[@]}"; do
    base=${m%.*}
    if grep -qw -- "$base" "$bin/known.txt" || ! grep -q l1tex "$bin/known.txt"; then
        metrics+=("$m")
    else
        say "ncu does not know $m"
    fi
done
list=$(IFS=,; echo "${metrics[*]}")
: >"$out/ncu-raw.txt"
run_ncu() {
    timeout 300 ncu --clock-control none --cache-control all --csv --page raw --print-units base \
        --metrics "$list" -k regex:'^k_' "$bin/kernels" "$@" >"$bin/ncu.csv" 2>>"$log"
}
# Every case in one process (one ncu start); case by case where that did not give a row each.
run_ncu --cases hw/cases.txt
echo "### all (ncu exit $?)" >>"$out/ncu-raw.txt"
cat "$bin/ncu.csv" >>"$out/ncu-raw.txt"
if ! python3 hw/collect.py --check hw/cases.txt "$out/ncu-raw.txt"; then
    say "one run did not give every case: running them one by one"
    i=0
    grep -v '^#' hw/cases.txt | grep -v '^ *$' | while read -r line; do
        i=$((i + 1))
        # shellcheck disable=SC2086
        run_ncu $line
        rc=$?
        echo "### case $i: $line (ncu exit $rc)" >>"$out/ncu-raw.txt"
        cat "$bin/ncu.csv" >>"$out/ncu-raw.txt"
        say "case $i: $line: ncu exit $rc"
    done
fi
python3 hw/collect.py hw/cases.txt "$out/ncu-raw.txt" "$out/counters.csv" 2>&1 | tee -a "$log"
say "== done $(date -u +%FT%TZ)"
