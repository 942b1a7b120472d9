#!/usr/bin/env bash
# The haptic loop under a browser: missed ticks of `palpa serve` while headless Chromium
# draws its viewer on the same machine (docs/benchmarks.md, "1 kHz under the viewer").
#
# usage: benches/realtime_under_viewer.sh [SECONDS] [MODE...]
#   SECONDS  length of each run (default 60)
#   MODE     serve's --realtime for each run, in order (default: auto off)
#
# What it runs, per mode: the release binary (built first with cargo build --release),
# `palpa serve --realtime MODE --device sim --bind 127.0.0.1:0` with the default scene
# (cache in a temporary PALPA_CACHE_DIR, precomputed by a first short start), then
# headless Chromium (`chromium`, or $PALPA_CHROMIUM; WebGL on SwiftShader, the flags of
# tests/stream_browser.rs) on the viewer URL with the control token, for SECONDS; then
# SIGINT, which makes serve log its whole-run tick statistics.
# Takes about (SECONDS + 15) s per mode. Prints, per mode, one line:
#   MODE: scheduling, locked memory, VmLck, viewers, ticks, missed (> 1.5 ms), % missed,
#   skipped deadlines, period p99.9 / max, page faults of the haptic thread after the
#   first 5 s, CPU time stolen by the hypervisor during the
#   run (/proc/stat steal, both CPUs; 0 on bare metal), load average before and after
# and exits 1 if a run did not produce its statistics. PIN_CORE=N pins the haptic
# thread to core N (taskset on the `palpa-haptic` thread) to measure what pinning does.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
modes=("$@")
((${#modes[@]})) || modes=(auto off)
chromium=${PALPA_CHROMIUM:-chromium}
command -v "$chromium" >/dev/null || {
  echo "no $chromium: apt-get install chromium chromium-driver (or set PALPA_CHROMIUM)" >&2
  exit 1
}

cargo build --release --quiet --bin palpa
palpa=target/release/palpa
work=$(mktemp -d)
serve_pid=''
browser_pid=''
cleanup() {
  [[ -n $browser_pid ]] && kill "$browser_pid" 2>/dev/null || true
  [[ -n $serve_pid ]] && kill -INT "$serve_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
export PALPA_CACHE_DIR=$work/cache RUST_LOG=info NO_COLOR=1

# Starts serve with MODE in the background; sets serve_pid and url.
start_serve() {
  "$palpa" serve --realtime "$1" --device sim --bind 127.0.0.1:0 \
    >"$work/stdout" 2>"$work/stderr" </dev/null &
  serve_pid=$!
  url=''
  for _ in $(seq 1200); do
    url=$(sed -n 's/^viewer: //p' "$work/stdout")
    [[ -n $url ]] && return 0
    kill -0 "$serve_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "palpa serve did not start:" >&2
  cat "$work/stdout" "$work/stderr" >&2
  exit 1
}

stop_serve() {
  kill -INT "$serve_pid"
  wait "$serve_pid" || true
  serve_pid=''
}

# A first start fills the modal cache, so the runs below do not precompute.
start_serve off
stop_serve

# "minor major" page faults of serve's haptic thread so far (proc(5) stat fields 10, 12).
haptic_faults() {
  for task in /proc/"$serve_pid"/task/*; do
    [[ $(cat "$task/comm") == palpa-haptic ]] && sed 's/.*) //' "$task/stat" | cut -d' ' -f8,10
  done
}
# Jiffies stolen from this VM's CPUs so far (/proc/stat, `cpu` line, 8th value), in ms.
steal_ms() { awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" { printf "%d\n", $9 * 1000 / hz }' /proc/stat; }
strip() { sed 's/\x1b\[[0-9;]*m//g' "$1"; }
status=0
for mode in "${modes[@]}"; do
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  steal_before=$(steal_ms)
  start_serve "$mode"
  if [[ -n ${PIN_CORE:-} ]]; then
    for task in /proc/"$serve_pid"/task/*; do
      [[ $(cat "$task/comm") == palpa-haptic ]] && taskset -p -c "$PIN_CORE" "${task##*/}" >/dev/null
    done
  fi
  profile="$work/profile-$mode"
  "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --use-angle=swiftshader --enable-unsafe-swiftshader --window-size=1280,720 \
    --user-data-dir="$profile" "$url" >/dev/null 2>&1 &
  browser_pid=$!
  sleep 5
  vm_lck=$(awk '/^VmLck:/ {print $2 " " $3}' "/proc/$serve_pid/status")
  read -r minor_before major_before < <(haptic_faults)
  sleep $((seconds - 5))
  read -r minor_after major_after < <(haptic_faults)
  kill "$browser_pid" 2>/dev/null || true
  wait "$browser_pid" 2>/dev/null || true
  browser_pid=''
  stop_serve
  load_after=$(cut -d' ' -f1-3 /proc/loadavg)
  steal=$(($(steal_ms) - steal_before))
  log=$(strip "$work/stderr")
  setup=$(sed -n 's/.*haptic thread: \(normal scheduler\|SCHED_FIFO priority [0-9]*\), \([0-9]* KiB\) locked.*/\1, \2 locked/p' <<<"$log")
  [[ -n $setup ]] || setup="off (nothing locked)"
  viewers=$(sed -n 's/.*; \([0-9]*\) viewers$/\1/p' <<<"$log" | sort -n | tail -1)
  run=$(sed -n 's/.*haptic loop, whole run: //p' <<<"$log")
  if [[ -z $run ]]; then
    echo "$mode: no whole-run statistics in the log:" >&2
    echo "$log" >&2
    status=1
    continue
  fi
  ticks=${run%% ticks*}
  missed=$(sed -n 's/.* missed \([0-9]*\) skipped.*/\1/p' <<<"$run")
  skipped=$(sed -n 's/.* skipped \([0-9]*\)$/\1/p' <<<"$run")
  p999=$(sed -n 's/.*p99.9 \([0-9]*\) µs max \([0-9]*\) µs, compute.*/\1 \/ \2 µs/p' <<<"$run")
  percent=$(awk -v m="$missed" -v t="$ticks" 'BEGIN { printf "%.3f", 100 * m / t }')
  echo "$mode${PIN_CORE:+ pinned to core $PIN_CORE}: $setup, VmLck $vm_lck, viewers ${viewers:-?}; $ticks ticks, missed $missed = $percent %," \
    "skipped $skipped, period p99.9 / max $p999, steal $steal ms, haptic thread page faults in the last $((seconds - 5)) s" \
    "$((minor_after - minor_before)) minor $((major_after - major_before)) major; load $load_before -> $load_after"
done
exit $status
