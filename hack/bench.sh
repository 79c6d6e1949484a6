#!/usr/bin/env bash
# Runs the benchmarks and prints one report: BENCH=micro,load,apiserver,controller,fleet
# picks parts (all by default). Ratios are always measured in the same run.
# A run of every part writes the report verbatim to docs/benchmarks.md
# (BENCH_OUT=<file> for another file, BENCH_OUT= with a subset to keep stdout only).
set -euo pipefail
cd "$(dirname "$0")/.."
all=micro,load,apiserver,controller,fleet
parts=${BENCH:-$all}
out=${BENCH_OUT-}
if [[ -z ${BENCH_OUT+set} && $parts == "$all" ]]; then out=docs/benchmarks.md; fi
export KUBEBUILDER_ASSETS=${KUBEBUILDER_ASSETS:-$(./hack/build-binaries.sh | tail -n1)}
go build -o bin/ ./cmd/... ./bench/...

report() {
  echo "Run: $(date -u +%Y-%m-%d), $(nproc) cores, $(go version | cut -d' ' -f3), commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!docs' || echo '+changes'), command: make bench BENCH=$parts"
  if [[ $parts == *micro* ]]; then
    echo; echo "## Micro-benchmarks (go test -bench -benchmem, 3 runs each)"; echo '```'
    go test -run '^$' -bench . -benchmem -count 3 ./mutate/ ./webhook/ | grep -E '^(Benchmark|ok)'
    echo '```'
  fi
  if [[ $parts == *load* ]]; then
    echo; echo "## AdmissionReview load over TLS (keep-alive, loopback): mgr-webhook vs a no-op controller-runtime webhook"
    bin/loadgen -bin-dir bin -duration "${LOAD_DURATION:-5s}"
  fi
  if [[ $parts == *apiserver* ]]; then
    echo; echo "## Through the real kube-apiserver (N=${APISERVER_N:-500} per setup, the setups' writes interleaved on one API server)"
    bin/apiserver -n "${APISERVER_N:-500}" 2>/dev/null
  fi
  if [[ $parts == *controller* ]]; then
    echo; echo "## Bootstrap controller at scale (kwok pods, one real Ceph cluster)"
    bin/controller -bin-dir bin -n "${CONTROLLER_N:-1000}" -namespaces "${CONTROLLER_NAMESPACES:-100}"
  fi
  if [[ $parts == *fleet* ]]; then
    echo; echo "## A fleet of Ceph clusters (kwok pods; real Ceph clusters shared by namespaces; blackholed mons)"
    bin/controller -bin-dir bin -fleet -clusters "${FLEET_CLUSTERS:-100}" -dark "${FLEET_DARK:-10}" -real "${FLEET_REAL:-3}" -rest "${FLEET_REST:-60s}"
  fi
}

if [[ -z $out ]]; then
  report
  exit 0
fi
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
report | tee "$tmp"
{
  echo "# Benchmarks"
  echo
  echo "Written by \`make bench\` (hack/bench.sh) from one run, verbatim: do not edit"
  echo "by hand. Every part runs on the same machine; the load generator shares the"
  echo "CPUs with the server, so compare the ratios, which are measured in the same"
  echo "run. What the figures mean, the targets and earlier runs: docs/performance.md."
  echo
  cat "$tmp"
} > "$out"
echo "wrote $out" >&2
