#!/usr/bin/env bash
# Runs the Ceph-facing tests again on other Ceph releases and writes their
# `go test -json` to stdout, each run opened by a "== run: <name>" line (which
# hack/testsummary names failures by). Each argument is one run:
#
#   <suite>              daemons and every CLI of Debian <suite>'s Ceph
#                        (hack/ceph-release.sh), e.g. sid (Tentacle 20.2)
#   <cluster>:<cli>      daemons of <cluster>, the controller's ceph CLI of
#                        <cli>: "host" is the host's own Ceph (bookworm,
#                        Pacific 16.2), e.g. host:sid for the newest CLI
#                        against the oldest cluster
#
# A run of daemons and CLI of one release runs CEPH_PACKAGES; a run that mixes
# releases runs the controller's suite (test/ceph/bootstrap), where the CLI meets
# the cluster. GO_TEST_FLAGS are passed to go test; KUBEBUILDER_ASSETS must be
# set.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${KUBEBUILDER_ASSETS:?set KUBEBUILDER_ASSETS (hack/build-binaries.sh)}"
read -r -a flags <<< "${GO_TEST_FLAGS:--count=1 -timeout=20m}"
read -r -a packages <<< "${CEPH_PACKAGES:-./internal/harness/cephtest/ ./bootstrap/ceph/ ./test/ceph/bootstrap/ ./test/e2e/}"

# bin prints the directory whose ceph tools are <suite>'s ("" for the host's).
bin() {
  if [ "$1" = host ]; then echo ""; else ./hack/ceph-release.sh "$1" | tail -n1; fi
}
version() { PATH="${1:+$1:}$PATH" ceph --version | cut -d' ' -f3,5; }

# gotest runs go test on packages of either module: ./test/... is the test
# module's (test/go.mod), the rest the product's.
gotest() {
  local product=() tests=() p
  for p in "$@"; do
    case $p in ./test/*) tests+=("./${p#./test/}") ;; *) product+=("$p") ;; esac
  done
  [ ${#product[@]} -eq 0 ] || go test "${flags[@]}" -json "${product[@]}" || true # testsummary judges
  [ ${#tests[@]} -eq 0 ] || go -C test test "${flags[@]}" -json "${tests[@]}" || true
}

for run in "$@"; do
  cluster=${run%%:*} cli=${run#*:}
  cluster_bin=$(bin "$cluster") cli_bin=$(bin "$cli")
  cli_path=${cli_bin:-/usr/bin}/ceph
  if [ "$cluster" = "$cli" ]; then
    echo "== run: Ceph $(version "$cluster_bin") ($cluster)"
    pkgs=("${packages[@]}")
  else
    echo "== run: Ceph $(version "$cluster_bin") ($cluster) cluster, controller CLI $(version "$cli_bin") ($cli)"
    pkgs=(./test/ceph/bootstrap/)
  fi
  PATH="${cluster_bin:+$cluster_bin:}$PATH" MGR_WEBHOOK_CONTROLLER_CEPH=$cli_path \
    gotest "${pkgs[@]}"
done
