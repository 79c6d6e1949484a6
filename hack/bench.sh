#!/usr/bin/env bash
# Runs the benchmarks and prints one report: BENCH=micro,load,apiserver,controller
# picks parts (all by default). Ratios are always measured in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
parts=${BENCH:-micro,load,apiserver,controller}
export KUBEBUILDER_ASSETS=${KUBEBUILDER_ASSETS:-$(./hack/build-binaries.sh | tail -n1)}
go build -o bin/ ./cmd/... ./bench/...
echo "# Benchmarks — $(date -u +%Y-%m-%d), $(nproc) cores, $(go version | cut -d' ' -f3), command: make bench BENCH=$parts"
if [[ $parts == *micro* ]]; then
  echo; echo "## Micro-benchmarks (go test -bench -benchmem)"; echo '```'
  go test -run '^$' -bench . -benchmem -count 3 ./mutate/ ./webhook/ | grep -E '^(Benchmark|ok)'
  echo '```'
fi
if [[ $parts == *load* ]]; then
  echo; echo "## AdmissionReview load over TLS (keep-alive, loopback): mgr-webhook vs a no-op controller-runtime webhook"
  bin/loadgen -bin-dir bin -duration "${LOAD_DURATION:-5s}"
fi
if [[ $parts == *apiserver* ]]; then
  echo; echo "## Through the real kube-apiserver (N=${APISERVER_N:-500}, sequential)"
  bin/apiserver -n "${APISERVER_N:-500}" 2>/dev/null
fi
if [[ $parts == *controller* ]]; then
  echo; echo "## Bootstrap controller at scale (kwok pods, one real Ceph cluster)"
  bin/controller -bin-dir bin -n "${CONTROLLER_N:-100}"
fi
