#!/usr/bin/env bash
# Mutation testing with gremlins (github.com/go-gremlins/gremlins, from the Go
# module proxy): every mutant of mutate/, webhook/, certs/, inject/,
# bootstrap/ and bootstrap/ceph/ (the pure core, the admission handlers, the
# certificate rotation, mgrctl's core, the controller, its ceph CLI runner)
# is run against that package's unit tests; the run fails when fewer than
# MUTATION_THRESHOLD percent of the covered mutants are killed, per package.
# And "manifests": test/cmd/manifest-mutants changes each rule of the
# shipped YAML (kustomize bases, the chart) one token at a time.
# Built with -tags unit, bootstrap/ceph leaves out its tests that need a Ceph
# daemon (live_test.go), which would start one for every mutant; a package
# listed under another is left out of that one's run (-E). MUTATION_PACKAGES
# picks others.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=v0.6.0
CACHE_ROOT=${XDG_CACHE_HOME:-$HOME/.cache}/mgr-webhook
BIN="$CACHE_ROOT/tools/gremlins-$VERSION"
if [[ ! -x $BIN ]]; then
  echo "[mutation] installing github.com/go-gremlins/gremlins/cmd/gremlins@$VERSION" >&2
  mkdir -p "$CACHE_ROOT/tools/bin-gremlins-$VERSION"
  GOBIN="$CACHE_ROOT/tools/bin-gremlins-$VERSION" go install "github.com/go-gremlins/gremlins/cmd/gremlins@$VERSION"
  mv "$CACHE_ROOT/tools/bin-gremlins-$VERSION/gremlins" "$BIN"
fi
# A mutant's cost is its package's test build: vet is left to make lint, and
# without inlining (-l) the mutated package compiles in about 5 s instead of
# 6.5 (bootstrap/). gremlins times a mutant out at 20 times the coverage run
# (a build and the tests; -count=1 keeps it from being a cached result of a
# fraction of a second): a mutant's build and tests take a fraction of that,
# and one that loops for ever costs minutes, not a quarter of an hour.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-vet=off -gcflags=-l -count=1"
# gremlins v0.6.0 exits 0 below its own threshold flag: the share is checked here.
threshold=${MUTATION_THRESHOLD:-90}
status=0
read -r -a pkgs <<< "${MUTATION_PACKAGES:-./mutate ./webhook ./certs ./inject ./bootstrap ./bootstrap/ceph manifests}"
# The shipped YAML: every one-token change of a rule must fail a test that
# reads it, or be listed in test/cmd/manifest-mutants/equivalent.txt with its
# reason (the tool fails otherwise). The chart is rendered for the Kubernetes
# version the tests build; no cluster is needed. Its mutants (a fraction of a
# second each) are judged beside the packages', at the lowest priority: the
# Go mutants' builds leave about an eighth of 2 cores idle (file I/O, each
# package's last mutants), which they take (measured: 1.95 cores busy on
# average instead of 1.75).
report='' manifests_log='' manifests_pid='' tool=''
# Stopped early, nothing is left running or behind.
trap '[[ -z $manifests_pid ]] || kill "$manifests_pid" 2>/dev/null || true; rm -rf "$tool" "$manifests_log" "$report"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# The tool is built first and exec'd, so that $! is the tool itself: go run
# would leave it running when this script stops early.
if [[ " ${pkgs[*]} " == *" manifests "* ]]; then
  manifests_log=$(mktemp)
  tool=$(mktemp -d)
  kube_version=$(./hack/build-binaries.sh --kube-version)
  (
    cd test
    nice -n 19 go build -o "$tool/manifest-mutants" ./cmd/manifest-mutants
    CHART_KUBE_VERSION=$kube_version exec nice -n 19 "$tool/manifest-mutants" -workers "${MUTATION_WORKERS:-2}"
  ) >"$manifests_log" 2>&1 &
  manifests_pid=$!
fi
for pkg in "${pkgs[@]}"; do
  [[ $pkg == manifests ]] && continue
  echo "## $pkg"
  # Generated code (controller-gen's DeepCopy) is its generator's to test.
  exclude=(-E 'zz_generated')
  for other in "${pkgs[@]}"; do
    if [[ $other == "$pkg"/* ]]; then
      exclude+=(-E "^${other#"$pkg"/}/")
    fi
  done
  # The report goes to a file first: tee to /dev/stderr would reopen, and
  # truncate, a log file that stderr is redirected to.
  report=$(mktemp)
  "$BIN" unleash --workers "${MUTATION_WORKERS:-2}" --tags unit "${exclude[@]}" --timeout-coefficient 20 -S lt "$pkg" >"$report" 2>&1 || true
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
