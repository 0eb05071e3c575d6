#!/bin/sh
# run.sh [SECONDS] - builds test/fuzz/fuzz_load.c with clang's libFuzzer,
# AddressSanitizer and UndefinedBehaviorSanitizer, and fuzzes the dump
# loader and the reports for SECONDS seconds (60 by default), starting from
# the golden dumps. The corpus grows in build/fuzz/corpus across runs; a
# crash leaves its input in build/fuzz/ and makes the exit status non-zero.
# FUZZ_SEED and FUZZ_RUNS make a run repeatable (make check uses them, so
# that CI checks the same inputs every time; by hand, explore at random).
set -eu
cd "$(dirname "$0")/../.."
secs=${1:-60}
B=${B:-build}
out=$B/fuzz
CLANG=${CLANG:-clang}
PKG_CONFIG=${PKG_CONFIG:-pkg-config}

mkdir -p "$out/corpus"
# shellcheck disable=SC2046 # pkg-config's words are flags
$CLANG -g -O1 -std=gnu11 -D_GNU_SOURCE -DASP_VERSION='"fuzz"' \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-Ianalyzer -Icommon $($PKG_CONFIG --cflags jansson libdw) \
	-o "$out/fuzz_load" test/fuzz/fuzz_load.c \
	analyzer/load.c analyzer/fmt.c analyzer/msg.c analyzer/summary.c \
	analyzer/leaks.c analyzer/errors.c analyzer/suppress.c analyzer/symbolize.c analyzer/compare.c \
	analyzer/profile.c analyzer/peak.c analyzer/strtab.c \
	common/*.c $($PKG_CONFIG --libs jansson libdw) -lstdc++
# A repeatable run starts from the golden dumps alone.
[ -n "${FUZZ_SEED:-}" ] && rm -rf "$out/corpus" && mkdir -p "$out/corpus"
cp test/golden/*.json "$out/corpus/"

repeat=
[ -n "${FUZZ_SEED:-}" ] && repeat="-seed=$FUZZ_SEED"
[ -n "${FUZZ_RUNS:-}" ] && repeat="$repeat -runs=$FUZZ_RUNS"
# shellcheck disable=SC2086 # $repeat is zero, one or two options
exec "$out/fuzz_load" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 $repeat \
	-max_len=65536 -dict=test/fuzz/dump.dict -artifact_prefix="$out/" \
	-print_final_stats=1 "$out/corpus"
