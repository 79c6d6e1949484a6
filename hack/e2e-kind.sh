#!/usr/bin/env bash
# Runs the e2e suite (test/e2e) on a kind cluster: needs Docker, kind and
# network access to cert-manager's release. The Ceph side is yours: two
# namespaces holding Rook's cluster objects (rook-ceph-mon, rook-ceph-config,
# ConfigMap rook-ceph-config, rook-ceph-admin-keyring) of reachable clusters,
# e.g. two Rook CephClusters, named in E2E_CEPH_NAMESPACES, and a third,
# disposable one in E2E_TEARDOWN_NAMESPACE, which a test deletes whole.
set -euo pipefail
cd "$(dirname "$0")/.."
CLUSTER=${KIND_CLUSTER:-mgr-webhook-e2e}
CERT_MANAGER=${CERT_MANAGER_VERSION:-v1.21.2}
: "${E2E_CEPH_NAMESPACES:?name two namespaces with Rook Ceph cluster objects, e.g. E2E_CEPH_NAMESPACES=rook-ceph,ceph-east}"
: "${E2E_TEARDOWN_NAMESPACE:?name a third, disposable namespace with Rook Ceph cluster objects; a test deletes it}"
for tool in docker kind kubectl; do command -v "$tool" >/dev/null || { echo "$tool is required" >&2; exit 1; }; done
docker info >/dev/null 2>&1 || { echo "no Docker engine: kind cannot run here; use make e2e (local control plane)" >&2; exit 1; }

kind get clusters | grep -qx "$CLUSTER" || kind create cluster --name "$CLUSTER"
kubeconfig=$(mktemp); trap 'rm -f "$kubeconfig"' EXIT
kind get kubeconfig --name "$CLUSTER" > "$kubeconfig"
make docker-build IMG_WEBHOOK=mgr-webhook:e2e IMG_BOOTSTRAP=mgr-bootstrap:e2e
kind load docker-image --name "$CLUSTER" mgr-webhook:e2e mgr-bootstrap:e2e
kubectl --kubeconfig "$kubeconfig" apply -f "https://github.com/cert-manager/cert-manager/releases/download/$CERT_MANAGER/cert-manager.yaml"
kubectl --kubeconfig "$kubeconfig" -n cert-manager wait --for=condition=Available deploy --all --timeout=5m
overlay=$(mktemp -d); trap 'rm -rf "$overlay" "$kubeconfig"' EXIT
cat > "$overlay/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [$(pwd)/manifests/overlays/cert-manager]
images:
  - {name: ghcr.io/rook-mgr/mgr-webhook, newName: mgr-webhook, newTag: e2e}
  - {name: ghcr.io/rook-mgr/mgr-bootstrap, newName: mgr-bootstrap, newTag: e2e}
YAML
kubectl --kubeconfig "$kubeconfig" apply -k "$overlay"
kubectl --kubeconfig "$kubeconfig" -n mgr-webhook-system wait --for=condition=Available deploy --all --timeout=5m
E2E_KUBECONFIG="$kubeconfig" E2E_CEPH_NAMESPACES="$E2E_CEPH_NAMESPACES" E2E_TEARDOWN_NAMESPACE="$E2E_TEARDOWN_NAMESPACE" go test -count=1 -v -timeout=20m ./test/e2e/
