#!/usr/bin/env bash
# The e2e suite (test/e2e) on kind, as the GitHub workflow and a person with
# Docker run it: builds both images, creates a kind cluster, installs
# cert-manager and the release manifests (make release, cert-manager mode),
# makes three namespaces throwaway Ceph clusters (one mon per namespace in a
# pod, test/kind/ceph-mon.yaml, with Rook's cluster objects), and runs the
# suite against them; its mgr pods are real ceph-mgr containers.
#
#   hack/e2e-kind.sh              everything above
#   hack/e2e-kind.sh ceph <ns>    only make <ns> a throwaway Ceph cluster in the
#                                 current kubeconfig's cluster (waits for nothing)
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

# cephx_key prints a new cephx secret, as ceph-authtool --gen-print-key does:
# base64 of type (1, AES), creation time, length 16 and 16 random bytes.
cephx_key() {
  python3 -c 'import base64,os,struct,time; print(base64.b64encode(struct.pack("<HIIH", 1, int(time.time()), 0, 16) + os.urandom(16)).decode())'
}

# ceph_cluster makes namespace $1 a throwaway Ceph cluster. Keys go through
# files, never a command line.
ceph_cluster() {
  local ns=$1 fsid ip files
  # A rerun on the same kind cluster keeps the clusters it made (new keys
  # would not match the running mon's store).
  if kubectl -n "$ns" get secret rook-ceph-mon >/dev/null 2>&1; then
    log "namespace $ns: already a Ceph cluster"
    return
  fi
  kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  kubectl -n "$ns" apply -f test/kind/ceph-mon.yaml >/dev/null
  ip=$(kubectl -n "$ns" get service rook-ceph-mon-a -o jsonpath='{.spec.clusterIP}')
  fsid=$(python3 -c 'import uuid; print(uuid.uuid4())')
  files=$(mktemp -d)
  (umask 077; printf '[client.admin]\n\tkey = %s\n\tcaps mds = "allow *"\n\tcaps mgr = "allow *"\n\tcaps mon = "allow *"\n\tcaps osd = "allow *"\n' "$(cephx_key)" > "$files/keyring")
  printf '[global]\nfsid = %s\nmon_host = [v2:%s:3300,v1:%s:6789]\nmon_initial_members = a\n' "$fsid" "$ip" "$ip" > "$files/ceph.conf"
  kubectl -n "$ns" create secret generic rook-ceph-mon --from-literal=fsid="$fsid"
  kubectl -n "$ns" create secret generic rook-ceph-config \
    --from-literal=mon_host="[v2:$ip:3300,v1:$ip:6789]" --from-literal=mon_initial_members=a
  kubectl -n "$ns" create secret generic rook-ceph-admin-keyring --from-file=keyring="$files/keyring"
  kubectl -n "$ns" create configmap rook-ceph-config --from-file=ceph.conf="$files/ceph.conf"
  kubectl -n "$ns" create configmap ceph-mon-a --from-file=mon.sh=test/kind/mon.sh --from-literal=public-addr="$ip"
  rm -rf "$files"
  log "namespace $ns: Ceph cluster $fsid, mon a at $ip"
}

if [ "${1:-}" = ceph ]; then
  ceph_cluster "${2:?hack/e2e-kind.sh ceph <namespace>}"
  exit 0
fi

for tool in docker kind kubectl python3 go; do command -v "$tool" >/dev/null || { echo "$tool is required" >&2; exit 1; }; done
docker info >/dev/null 2>&1 || { echo "no Docker engine: kind cannot run here; use make e2e (local control plane)" >&2; exit 1; }

kind get clusters | grep -qx "$CLUSTER" || kind create cluster --name "$CLUSTER" --wait 5m
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
export KUBECONFIG=$work/kubeconfig
kind get kubeconfig --name "$CLUSTER" > "$KUBECONFIG"

log "images ghcr.io/rook-mgr/mgr-webhook:$TAG, ghcr.io/rook-mgr/mgr-bootstrap:$TAG"
make docker-build VERSION="$TAG" IMG_WEBHOOK="ghcr.io/rook-mgr/mgr-webhook:$TAG" IMG_BOOTSTRAP="ghcr.io/rook-mgr/mgr-bootstrap:$TAG"
kind load docker-image --name "$CLUSTER" "ghcr.io/rook-mgr/mgr-webhook:$TAG" "ghcr.io/rook-mgr/mgr-bootstrap:$TAG"

log "cert-manager $CERT_MANAGER"
kubectl apply -f "https://github.com/cert-manager/cert-manager/releases/download/$CERT_MANAGER/cert-manager.yaml"
kubectl -n cert-manager wait --for=condition=Available deploy --all --timeout=5m

log "the release manifests (cert-manager mode) of $TAG"
VERSION=$TAG DIST=$work KUBECTL=$(command -v kubectl) ./hack/release.sh >/dev/null
kubectl apply --server-side -f "$work/install-cert-manager.yaml"
kubectl -n mgr-webhook-system wait --for=condition=Available deploy --all --timeout=5m
# The suite's mgrs choose modules by annotation: the site policy must offer
# them (moduleChoices), as internal/localcluster's SitePolicy does.
policy=$(kubectl -n mgr-webhook-system get deployment mgr-webhook -o 'jsonpath={.spec.template.spec.volumes[?(@.name=="policy")].configMap.name}')
kubectl -n mgr-webhook-system patch configmap "$policy" --type merge \
  -p '{"data":{"policy.yaml":"apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nmoduleChoices: [orchestrator_cli, rook, prometheus, dashboard]\n"}}'
kubectl -n mgr-webhook-system rollout restart deploy/mgr-webhook deploy/mgr-bootstrap
kubectl -n mgr-webhook-system rollout status deploy/mgr-webhook --timeout=5m
kubectl -n mgr-webhook-system rollout status deploy/mgr-bootstrap --timeout=5m

if [ -z "${E2E_CEPH_NAMESPACES:-}" ]; then
  for ns in ceph-west ceph-east ceph-teardown; do ceph_cluster "$ns"; done
  for ns in ceph-west ceph-east ceph-teardown; do
    kubectl -n "$ns" wait --for=condition=Available deploy/rook-ceph-mon-a --timeout=5m
  done
  E2E_CEPH_NAMESPACES=ceph-west,ceph-east E2E_TEARDOWN_NAMESPACE=ceph-teardown
fi
: "${E2E_TEARDOWN_NAMESPACE:?with E2E_CEPH_NAMESPACES, name a third, disposable Ceph namespace in E2E_TEARDOWN_NAMESPACE}"

log "e2e suite on $E2E_CEPH_NAMESPACES (teardown: $E2E_TEARDOWN_NAMESPACE)"
E2E_KUBECONFIG="$KUBECONFIG" E2E_CEPH_NAMESPACES="$E2E_CEPH_NAMESPACES" E2E_TEARDOWN_NAMESPACE="$E2E_TEARDOWN_NAMESPACE" \
  go test -count=1 -v -timeout=30m ./test/e2e/
