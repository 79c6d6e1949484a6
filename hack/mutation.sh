#!/usr/bin/env bash
# Mutation testing: every mutant of mutate/, webhook/, certs/, inject/,
# bootstrap/ and its audit/, cluster/, roles/, mgrstatus/ and ceph/ (the pure core, the
# admission handlers, the certificate rotation, mgrctl's core, the
# controller, its policy audit, its cluster cache, its role labels, its status store, its ceph
# CLI runner)
# is run against that package's unit tests; the run fails when fewer than
# MUTATION_THRESHOLD percent of the covered mutants are killed, per package.
# The mutants are gremlins v0.6.0's defaults (github.com/go-gremlins/gremlins),
# run by test/cmd/go-mutants as mutant schemata: one test binary a package,
# each mutant behind a switch, instead of a build and link a mutant (about 7
# CPU-seconds each on 2 cores; the six packages took 34 minutes).
# And "manifests": test/cmd/manifest-mutants changes each rule of the
# shipped YAML (kustomize bases, the chart) one token at a time.
# Built with -tags unit, bootstrap/ceph leaves out its tests that need a Ceph
# daemon (live_test.go), which would start one for every mutant.
# MUTATION_PACKAGES picks others; MUTATION_CROSS_CHECK=1 builds every Go
# mutant alone too, as gremlins does, and fails where the verdicts differ.
set -euo pipefail
cd "$(dirname "$0")/.."
# vet is left to make lint; -count=1 keeps the coverage run from being a
# cached result.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-vet=off -count=1"
threshold=${MUTATION_THRESHOLD:-90}
cross_check=()
[[ -z ${MUTATION_CROSS_CHECK:-} ]] || cross_check=(-cross-check)
status=0
read -r -a pkgs <<< "${MUTATION_PACKAGES:-./mutate ./webhook ./certs ./inject ./bootstrap ./bootstrap/audit ./bootstrap/cluster ./bootstrap/roles ./bootstrap/mgrstatus ./bootstrap/ceph manifests}"
# The shipped YAML: every one-token change of a rule must fail a test that
# reads it, or be listed in test/cmd/manifest-mutants/equivalent.txt with its
# reason (the tool fails otherwise). The chart is rendered for the Kubernetes
# version the tests build; no cluster is needed. Its mutants (a fraction of a
# second each) are judged beside the packages', at the lowest priority.
report='' manifests_log='' manifests_pid='' tool=''
# Stopped early, nothing is left running or behind.
trap '[[ -z $manifests_pid ]] || kill "$manifests_pid" 2>/dev/null || true; rm -rf "$tool" "$manifests_log" "$report"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# The tools are built first and the manifests' exec'd, so that $! is the
# tool itself: go run would leave it running when this script stops early.
tool=$(mktemp -d)
(cd test && go build -o "$tool/" ./cmd/go-mutants ./cmd/manifest-mutants)
if [[ " ${pkgs[*]} " == *" manifests "* ]]; then
  manifests_log=$(mktemp)
  kube_version=$(./hack/build-binaries.sh --kube-version)
  (
    cd test
    CHART_KUBE_VERSION=$kube_version exec nice -n 19 "$tool/manifest-mutants" -workers "${MUTATION_WORKERS:-2}"
  ) >"$manifests_log" 2>&1 &
  manifests_pid=$!
fi
for pkg in "${pkgs[@]}"; do
  [[ $pkg == manifests ]] && continue
  echo "## $pkg"
  # Generated code (controller-gen's DeepCopy) is its generator's to test.
  report=$(mktemp)
  # The report goes to a file first: tee to /dev/stderr would reopen, and
  # truncate, a log file that stderr is redirected to.
  "$tool/go-mutants" -tags unit -exclude zz_generated -workers "${MUTATION_WORKERS:-2}" \
    "${cross_check[@]}" "$pkg" >"$report" 2>&1 || status=1
  cat "$report" >&2
  out=$(cat "$report")
  rm -f "$report"
  efficacy=$(sed -n 's/^Test efficacy: \([0-9.]*\)%.*/\1/p' <<<"$out")
  if [[ -z $efficacy ]] || awk -v e="$efficacy" -v t="$threshold" 'BEGIN { exit !(e < t) }'; then
    echo "[mutation] $pkg: ${efficacy:-no}% of covered mutants killed, under $threshold%" >&2
    status=1
  fi
done
if [[ -n $manifests_log ]]; then
  echo "## manifests"
  wait "$manifests_pid" || status=1
  cat "$manifests_log" >&2
fi
exit $status
