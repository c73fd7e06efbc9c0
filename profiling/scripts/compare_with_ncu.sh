#!/usr/bin/env bash
# Measures one kernel at one shape with flashscope and with Nsight Compute and prints both:
#   flashscope: median of timed launches (CUDA events, cold and warm L2) and the CUPTI range
#               profiler's gpu__time_duration.sum / lts__t_sector_hit_rate.pct (cold L2)
#   ncu:        --clock-control none, default cache control (flush before each replay pass)
#
#   profiling/scripts/compare_with_ncu.sh EXPLORER STEP "CONFIG" SEQ_LEN [OUT_DIR]
#
# The kernel runs on the seed's shape for SEQ_LEN (batch min(16, 65536/N), 16 heads).
set -euo pipefail
if [[ $# -lt 4 ]]; then sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2; fi
EXPLORER=$1 STEP=$2 CONFIG=$3 N=$4
OUT=${5:-$(mktemp -d)}
mkdir -p "$OUT"
COMMON=(--csv --steps "$STEP" --config "$CONFIG" --seq-lens "$N" --reference none --seed 1)
PROFILED=(--metric-runs 5)  # ncu below profiles 5 launches too

"$EXPLORER" "${COMMON[@]}" "${PROFILED[@]}" --cold-l2 --runs 30 --warmup 10 --target-ms 0 --output "$OUT/flashscope_cold.csv" \
  2> "$OUT/flashscope_cold.log"
"$EXPLORER" "${COMMON[@]}" "${PROFILED[@]}" --runs 30 --warmup 10 --target-ms 0 --output "$OUT/flashscope_warm.csv" \
  2> "$OUT/flashscope_warm.log"
# Under ncu the sweep collects no counters itself (one profiler at a time); ncu follows the worker
# and profiles its first 5 launches: the correctness launch, 1 warm-up and the 3 timed ones.
ncu --clock-control none --print-units base --csv -k regex:flash_forward_kernel --launch-count 5 \
  --metrics gpu__time_duration.sum,lts__t_sector_hit_rate.pct,sm__cycles_elapsed.max \
  "$EXPLORER" "${COMMON[@]}" --metrics none --runs 3 --warmup 1 --target-ms 0 --output "$OUT/under_ncu.csv" \
  > "$OUT/ncu.csv" 2> "$OUT/ncu.log"

python3 - "$OUT" <<'PY'
import csv, statistics, sys, os
out = sys.argv[1]
def row(name):
    with open(os.path.join(out, name)) as f:
        return next(csv.DictReader(f))
cold, warm = row("flashscope_cold.csv"), row("flashscope_warm.csv")
values = {}
with open(os.path.join(out, "ncu.csv")) as f:
    lines = [l for l in f if l.startswith('"')]
for r in csv.DictReader(lines):
    values.setdefault(r["Metric Name"], []).append(float(r["Metric Value"].replace(",", "")))
ncu_ms = statistics.median(values["gpu__time_duration.sum"]) / 1e6
ncu_l2 = statistics.median(values["lts__t_sector_hit_rate.pct"])
ncu_cycles = statistics.median(values["sm__cycles_elapsed.max"])
print(f"kernel: step {cold['step']} {cold['config']} {cold['dtype']} B={cold['batch']} "
      f"H={cold['heads']} N={cold['seq_len']}; {cold['device']}")
print(f"ncu (5 launches, median):      duration {ncu_ms:.4f} ms, L2 hit {ncu_l2:.2f} %, "
      f"cycles {ncu_cycles:.0f} (so {ncu_cycles / ncu_ms / 1e3:.0f} MHz)")
for label, r in (("flashscope cold", cold), ("flashscope warm", warm)):
    median = float(r["median_ms"])
    line = (f"{label} (events, median of {r['runs']}): {median:.4f} ms "
            f"({100 * (median / ncu_ms - 1):+.2f} % vs ncu), SM clock {r['sm_clock_mhz']} MHz")
    if r["cupti_duration_ms"]:
        cupti = float(r["cupti_duration_ms"])
        l2 = float(r["l2_hit_pct"])
        line += (f"; CUPTI duration {cupti:.4f} ms ({100 * (cupti / ncu_ms - 1):+.2f} %), "
                 f"L2 hit {l2:.2f} % ({l2 - ncu_l2:+.2f} points), cycles {float(r['cycles']):.0f}"
                 f" (so {float(r['cycles']) / cupti / 1e3:.0f} MHz profiled, "
                 f"{float(r['cycles']) / median / 1e3:.0f} MHz timed)")
    print(line)
PY
