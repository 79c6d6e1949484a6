#!/usr/bin/env bash
# The e2e suite (test/e2e) on kind, as the GitHub workflow and a person with
# Docker run it: builds both images, creates a kind cluster and loads them;
# the rest is hack/e2e-remote.sh, the very steps make e2e-node runs on a real
# kubelet here: cert-manager and the release manifests (cert-manager mode),
# three throwaway Ceph clusters, the suite.
#
#   hack/e2e-kind.sh              everything above
#   hack/e2e-kind.sh ceph <ns>    hack/e2e-remote.sh ceph <ns>: only make <ns> a
#                                 throwaway Ceph cluster in the current
#                                 kubeconfig's cluster (waits for nothing)
#
# Bring your own Ceph instead (e.g. Rook CephClusters): set E2E_CEPH_NAMESPACES
# (two namespaces with Rook's cluster objects) and E2E_TEARDOWN_NAMESPACE (a
# third, disposable one, which a test deletes whole).
set -euo pipefail
cd "$(dirname "$0")/.."
CLUSTER=${KIND_CLUSTER:-mgr-webhook-e2e}
CERT_MANAGER=${CERT_MANAGER_VERSION:-v1.21.2}
TAG=${E2E_IMAGE_TAG:-e2e}
log() { printf '[e2e-kind] %s\n' "$*" >&2; }

if [ "${1:-}" = ceph ]; then
  exec ./hack/e2e-remote.sh "$@"
fi

for tool in docker kind kubectl python3 go; do command -v "$tool" >/dev/null || { echo "$tool is required" >&2; exit 1; }; done
docker info >/dev/null 2>&1 || { echo "no Docker engine: kind cannot run here; use make e2e (local control plane)" >&2; exit 1; }

kind get clusters | grep -x "$CLUSTER" >/dev/null || kind create cluster --name "$CLUSTER" --wait 5m
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
export KUBECONFIG=$work/kubeconfig
kind get kubeconfig --name "$CLUSTER" > "$KUBECONFIG"

log "images ghcr.io/rook-mgr/mgr-webhook:$TAG, ghcr.io/rook-mgr/mgr-bootstrap:$TAG"
make docker-build VERSION="$TAG" IMG_WEBHOOK="ghcr.io/rook-mgr/mgr-webhook:$TAG" IMG_BOOTSTRAP="ghcr.io/rook-mgr/mgr-bootstrap:$TAG"
kind load docker-image --name "$CLUSTER" "ghcr.io/rook-mgr/mgr-webhook:$TAG" "ghcr.io/rook-mgr/mgr-bootstrap:$TAG"

# Everything else is the same on every cluster: hack/e2e-remote.sh.
E2E_IMAGE_TAG=$TAG CERT_MODE=cert-manager CERT_MANAGER_VERSION=$CERT_MANAGER ./hack/e2e-remote.sh
