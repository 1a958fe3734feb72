#!/usr/bin/env bash
# Builds the libFuzzer targets in Fuzz/ (-sanitize=fuzzer,address) and runs them.
#
# Usage: bash Scripts/fuzz.sh [--seconds N] [--parallel] [--replay] [--merge] [--seeds] [target...]
#   --seconds N  run each target for N seconds (default 60; CI's short run); hours on demand
#   --parallel   run the targets at the same time (each still for N seconds), as CI does
#   --replay     only run every input of the committed corpus once (no fuzzing)
#   --merge      afterwards, fold the new inputs that add coverage into the committed corpus
#   --seeds      rewrite the seeds of the committed corpus (Fuzz/Corpus) from valid traffic first
# Targets: FrameDecoderFuzz ClientInboundFuzz ServerInboundFuzz RESPParserFuzz TLSRecordFuzz InflationFuzz PushStoreRepliesFuzz (default: all).
# Inputs found go to Fuzz/.build/corpus/TARGET (not committed); crashing inputs to
# Fuzz/.build/artifacts/TARGET/, and the script exits 1. Replay one: Fuzz/.build/release/TARGET FILE.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root/Fuzz"

seconds=60
replay=0
merge=0
seeds=0
parallel=0
targets=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --seconds) seconds="$2"; shift 2 ;;
        --replay) replay=1; shift ;;
        --merge) merge=1; shift ;;
        --seeds) seeds=1; shift ;;
        --parallel) parallel=1; shift ;;
        -h | --help) sed -n '2,13p' "${BASH_SOURCE[0]}"; exit 0 ;;
        -*) echo "fuzz: unknown option $1" >&2; exit 2 ;;
        *) targets+=("$1"); shift ;;
    esac
done
if [[ ${#targets[@]} -eq 0 ]]; then
    targets=(FrameDecoderFuzz ClientInboundFuzz ServerInboundFuzz RESPParserFuzz TLSRecordFuzz InflationFuzz PushStoreRepliesFuzz)
fi

if [[ $seeds -eq 1 ]]; then
    # The generator has a main of its own, so it is built apart, without the fuzzer.
    swift build --scratch-path .build/seeds --product FuzzSeeds
    for target in FrameDecoderFuzz ClientInboundFuzz ServerInboundFuzz RESPParserFuzz InflationFuzz PushStoreRepliesFuzz; do mkdir -p "Corpus/$target"; done
    .build/seeds/debug/FuzzSeeds Corpus
fi

# Every module gets the fuzzer's coverage instrumentation and ASan; -enable-testing lets the
# targets `@testable import` the internal state machines of an optimized build.
build_log="$(mktemp)"
trap 'rm -f "$build_log"' EXIT
for target in "${targets[@]}"; do
    echo "fuzz: building $target"
    if ! swift build -c release --product "$target" \
        -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing >"$build_log" 2>&1; then
        cat "$build_log"
        echo "fuzz: $target failed to build" >&2
        exit 1
    fi
    # Gold's note about an ASan-internal symbol is no warning of ours; any compiler warning about
    # a file of this repository fails the build, as in the main package.
    grep -v "Cannot export local symbol" "$build_log" || true
    warnings="$(awk -v root="$root/" '
        /^warning:/ || /^[^ |]+:[0-9]+:[0-9]+: warning:/ {
            if (substr($0, 1, 1) != "/" || index($0, root) == 1) print
        }' "$build_log" | grep -v "Cannot export local symbol" || true)"
    if [[ -n "$warnings" ]]; then
        echo "fuzz: $target built with warnings:" >&2
        printf '%s\n' "$warnings" >&2
        exit 1
    fi
done
bin="$(swift build -c release --show-bin-path)"

# Without this the Swift runtime's backtracer takes the crash signal and libFuzzer never writes
# the crashing input.
export SWIFT_BACKTRACE=enable=no
# One target: replay or fuzz, then merge; its output goes to .build/logs/TARGET.log as well.
run_target() {
    local target="$1" corpus="Corpus/$1"
    mkdir -p "$corpus" ".build/corpus/$target" ".build/artifacts/$target"
    local common=(-artifact_prefix=".build/artifacts/$target/" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1)
    if [[ $replay -eq 1 ]]; then
        echo "fuzz: replaying $corpus ($(find "$corpus" -type f | wc -l) inputs) through $target"
        "$bin/$target" "${common[@]}" -runs=0 "$corpus"
        return
    fi
    echo "fuzz: running $target for $seconds s"
    # Found inputs go to the first (scratch) directory; the committed corpus only seeds.
    "$bin/$target" "${common[@]}" -max_total_time="$seconds" ".build/corpus/$target" "$corpus" || return 1
    if [[ $merge -eq 1 ]]; then
        "$bin/$target" -merge=1 "$corpus" ".build/corpus/$target"
    fi
}

mkdir -p .build/logs
status=0
if [[ $parallel -eq 1 ]]; then
    # All at once, each for the full time: libFuzzer is single-threaded, and two cores run three
    # targets in about a third of the serial wall time.
    pids=()
    for target in "${targets[@]}"; do
        run_target "$target" >".build/logs/$target.log" 2>&1 &
        pids+=($!)
    done
    for index in "${!targets[@]}"; do
        target="${targets[$index]}"
        wait "${pids[$index]}" || { status=1; cat ".build/logs/$target.log"; }
        echo "fuzz: $target: $(grep -E '^#[0-9]+' ".build/logs/$target.log" | tail -n 1)"
        grep '^stat::' ".build/logs/$target.log" || true
    done
else
    for target in "${targets[@]}"; do
        run_target "$target" 2>&1 | tee ".build/logs/$target.log" || status=1
    done
fi
if [[ $status -ne 0 ]]; then
    echo "fuzz: a target failed; crashing inputs are in Fuzz/.build/artifacts/" >&2
fi
exit $status
