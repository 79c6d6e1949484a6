#!/usr/bin/env bash
# The e2e suite (test/e2e) on a multi-node kind cluster, as the GitHub
# workflow and a person with Docker run it: makes the cluster, builds both
# images and loads them; the rest is hack/e2e-remote.sh, the very steps
# make e2e-node runs on a real kubelet here: the release manifests, three
# throwaway Ceph clusters, the suite.
#
#   hack/e2e-kind.sh              everything above
#   hack/e2e-kind.sh up           only the cluster and the images; prints the
#                                 kubeconfig's path (test/ceph/kind's lane)
#   hack/e2e-kind.sh down         deletes the cluster
#   hack/e2e-kind.sh ceph <ns>    hack/e2e-remote.sh ceph <ns>: only make <ns> a
#                                 throwaway Ceph cluster in the current
#                                 kubeconfig's cluster (waits for nothing)
#
# With a registry (kindest/node can be pulled): kind's own node image and
# CNI, `make docker-build`, cert-manager mode. Without one (nothing can be
# pulled, as on this project's CI machines), everything is made here:
# the node image (hack/kind-image.sh), the Ceph image from Debian's Ceph
# (hack/ceph-release.sh), both images of the project from this checkout,
# pod networking by the script (a ptp CNI config and routes per node, the
# job kindnetd does), and the suite in self-signed mode (cert-manager's
# images cannot be had offline). KIND_OFFLINE=1|0 forces either.
#
# KIND_WORKERS (3): worker nodes besides the control plane. Bring your own
# Ceph instead (e.g. Rook CephClusters): set E2E_CEPH_NAMESPACES (two
# namespaces with Rook's cluster objects) and E2E_TEARDOWN_NAMESPACE (a
# third, disposable one, which a test deletes whole).
set -euo pipefail
cd "$(dirname "$0")/.."
CLUSTER=${KIND_CLUSTER:-mgr-webhook-e2e}
CERT_MANAGER=${CERT_MANAGER_VERSION:-v1.21.2}
TAG=${E2E_IMAGE_TAG:-e2e}
WORKERS=${KIND_WORKERS:-3}
KIND_VERSION=${KIND_VERSION:-v0.33.0}
CEPH_SUITE=${CEPH_SUITE:-sid}
CACHE_ROOT=${MGR_WEBHOOK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mgr-webhook}
KUBECONFIG_OUT=${KIND_KUBECONFIG:-$CACHE_ROOT/kind-$CLUSTER.kubeconfig}
log() { printf '[e2e-kind] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

case ${1:-} in
  ceph) exec ./hack/e2e-remote.sh "$@" ;;
esac

for tool in docker python3 go; do command -v "$tool" >/dev/null || die "$tool is required"; done
docker info >/dev/null 2>&1 || die "no Docker engine: kind cannot run here; use make e2e (local control plane) or make e2e-node"
if ! command -v kubectl >/dev/null; then
  assets=$(./hack/build-binaries.sh | tail -n1)
  export PATH="$assets:$PATH"
fi
kind_bin=$(command -v kind || true)
if [ -z "$kind_bin" ]; then
  kind_bin=$CACHE_ROOT/kind-$KIND_VERSION/kind
  if [ ! -x "$kind_bin" ]; then
    log "kind $KIND_VERSION: go install from the Go module proxy"
    GOBIN=$(dirname "$kind_bin") CGO_ENABLED=0 go install "sigs.k8s.io/kind@$KIND_VERSION"
  fi
fi

# A host whose root lacks a capability cannot run any --privileged
# container (kind's nodes are) nor exec --privileged in one (kind does):
# hack/kind/docker gives them what the host can.
kind_env=()
have=$(awk '/^CapBnd:/ {print $2}' /proc/self/status)
if (( (16#$have & 16#3fffffffff) != 16#3fffffffff )); then
  log "this host's root lacks capabilities Docker's --privileged asks for (bounding set $have): kind runs through hack/kind/docker"
  kind_env+=(PATH="$PWD/hack/kind:$PATH")
fi
kind() { env "${kind_env[@]}" "$kind_bin" "$@"; }

if [ "${1:-}" = down ]; then
  kind delete cluster --name "$CLUSTER"
  rm -f "$KUBECONFIG_OUT"
  exit 0
fi

# Offline: kind's default node image is neither in Docker nor pullable.
default_image=$(sed -n 's/^const Image = "\(.*\)"/\1/p' "$(go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')/pkg/apis/config/defaults/image.go")
if [ -z "${KIND_OFFLINE:-}" ]; then
  KIND_OFFLINE=0
  docker image inspect "$default_image" >/dev/null 2>&1 || timeout 60 docker pull -q "$default_image" >/dev/null 2>&1 || KIND_OFFLINE=1
fi
if [ "$KIND_OFFLINE" = 1 ]; then
  node_image=$(./hack/kind-image.sh | tail -n1)
  # Docker runs the node image's files on fuse-overlayfs here; the node's
  # /var (containerd's snapshots) is a volume, where overlayfs works.
  kind_env+=(KIND_EXPERIMENTAL_CONTAINERD_SNAPSHOTTER=overlayfs)
else
  node_image=$default_image
fi

if ! kind get clusters 2>/dev/null | grep -x "$CLUSTER" >/dev/null; then
  config=$(mktemp)
  {
    echo "kind: Cluster"
    echo "apiVersion: kind.x-k8s.io/v1alpha4"
    echo "networking:"
    [ "$KIND_OFFLINE" = 1 ] && echo "  disableDefaultCNI: true" # kindnetd's image cannot be had
    echo "  kubeProxyMode: nftables"
    echo "kubeadmConfigPatches:"
    echo "- |"
    echo "  kind: KubeletConfiguration"
    echo "  failCgroupV1: false" # cgroup v1 hosts: kubelet >= 1.35 refuses them by default
    echo "nodes:"
    echo "- role: control-plane"
    for _ in $(seq "$WORKERS"); do echo "- role: worker"; done
  } > "$config"
  log "kind create cluster $CLUSTER: 1 control plane + $WORKERS workers, node image $node_image"
  start=$SECONDS
  kind create cluster --name "$CLUSTER" --image "$node_image" --config "$config" --retain >&2 ||
    { kind export logs --name "$CLUSTER" "$CACHE_ROOT/kind-logs" >&2 || true; rm -f "$config"; die "kind create cluster failed: logs in $CACHE_ROOT/kind-logs"; }
  rm -f "$config"
  log "cluster created in $((SECONDS - start))s"
fi
kind get kubeconfig --name "$CLUSTER" > "$KUBECONFIG_OUT"
export KUBECONFIG=$KUBECONFIG_OUT

nodes=$(kind get nodes --name "$CLUSTER")
if [ "$KIND_OFFLINE" = 1 ]; then
  # kindnetd's job: each node's pods on a ptp network of its podCIDR, and a
  # route to every other node's podCIDR through that node.
  declare -A cidr ip
  for n in $nodes; do
    cidr[$n]=$(kubectl get node "$n" -o jsonpath='{.spec.podCIDR}')
    ip[$n]=$(kubectl get node "$n" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')
    if [ -z "${cidr[$n]}" ] || [ -z "${ip[$n]}" ]; then die "node $n has no podCIDR or InternalIP yet"; fi
  done
  for n in $nodes; do
    docker exec -i "$n" sh -c 'mkdir -p /etc/cni/net.d && cat > /etc/cni/net.d/10-kind-local.conflist' <<EOF
{"cniVersion": "1.0.0", "name": "kind-local", "plugins": [
  {"type": "ptp", "ipMasq": false, "mtu": 1500,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "${cidr[$n]}"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
EOF
    for m in $nodes; do
      [ "$m" = "$n" ] || docker exec "$n" ip route replace "${cidr[$m]}" via "${ip[$m]}"
    done
  done
fi
kubectl wait --for=condition=Ready nodes --all --timeout=5m >&2

if [ "$KIND_OFFLINE" = 1 ]; then
  # The Ceph image (mons, mgrs, and the controller's base) from the Debian
  # suite's Ceph, named as Ceph's own release image is.
  ceph_bin=$(./hack/ceph-release.sh "$CEPH_SUITE" | tail -n1)
  version=$(PATH="$ceph_bin:$PATH" ceph --version | cut -d' ' -f3)
  ceph_image=quay.io/ceph/ceph:v$version
  if ! docker image inspect "$ceph_image" >/dev/null 2>&1; then
    log "image $ceph_image from $(dirname "$ceph_bin")/rootfs"
    tar -C "$(dirname "$ceph_bin")/rootfs" -c . | docker import --change 'ENTRYPOINT ["/bin/bash"]' - "$ceph_image" >/dev/null
  fi
  log "images ghcr.io/rook-mgr/mgr-webhook:$TAG, ghcr.io/rook-mgr/mgr-bootstrap:$TAG from this checkout"
  bins=$(mktemp -d)
  ldflags="-s -w -X github.com/rook-mgr/mgr-webhook/version.Version=$TAG -X github.com/rook-mgr/mgr-webhook/version.Revision=$(git rev-parse HEAD 2>/dev/null || true)"
  mkdir -p "$bins/webhook/etc" "$bins/webhook/tmp"
  CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$bins/webhook/mgr-webhook" ./cmd/mgr-webhook
  CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$bins/mgr-bootstrap" ./cmd/mgr-bootstrap
  # As the Dockerfile's: the webhook alone, run as nonroot; the controller
  # on the Ceph image (its ceph CLI), run as ceph.
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$bins/webhook/etc/passwd"
  chmod 1777 "$bins/webhook/tmp"
  tar -C "$bins/webhook" -c . | docker import --change 'USER 65532:65532' --change 'ENTRYPOINT ["/mgr-webhook"]' - "ghcr.io/rook-mgr/mgr-webhook:$TAG" >/dev/null
  box=$(docker create "$ceph_image")
  docker cp "$bins/mgr-bootstrap" "$box:/usr/local/bin/mgr-bootstrap"
  docker commit --change 'USER 167:167' --change 'ENTRYPOINT ["/usr/local/bin/mgr-bootstrap"]' "$box" "ghcr.io/rook-mgr/mgr-bootstrap:$TAG" >/dev/null
  docker rm "$box" >/dev/null
  rm -rf "$bins"
  kind load docker-image --name "$CLUSTER" "$ceph_image" >&2
  export E2E_CEPH_IMAGE=$ceph_image
else
  ceph_image=
  log "images ghcr.io/rook-mgr/mgr-webhook:$TAG, ghcr.io/rook-mgr/mgr-bootstrap:$TAG"
  make docker-build VERSION="$TAG" IMG_WEBHOOK="ghcr.io/rook-mgr/mgr-webhook:$TAG" IMG_BOOTSTRAP="ghcr.io/rook-mgr/mgr-bootstrap:$TAG" >&2
fi
kind load docker-image --name "$CLUSTER" "ghcr.io/rook-mgr/mgr-webhook:$TAG" "ghcr.io/rook-mgr/mgr-bootstrap:$TAG" >&2

if [ "${1:-}" = up ]; then
  echo "$KUBECONFIG_OUT"
  exit 0
fi

# Everything else is the same on every cluster: hack/e2e-remote.sh. The
# suite runs its real-node tests (-tags=node) and the multi-node ones
# (-tags=kind), losing a node by freezing its container.
pause='docker pause {}' unpause='docker unpause {}'
export E2E_NODE_LOSS=${E2E_NODE_LOSS:-$pause} E2E_NODE_RESTORE=${E2E_NODE_RESTORE:-$unpause}
export E2E_GO_TEST_FLAGS="-tags=node,kind ${E2E_GO_TEST_FLAGS:-}"
status=0
if [ "$KIND_OFFLINE" = 1 ]; then
  E2E_IMAGE_TAG=$TAG CERT_MODE=self-signed ./hack/e2e-remote.sh || status=$?
else
  E2E_IMAGE_TAG=$TAG CERT_MODE=cert-manager CERT_MANAGER_VERSION=$CERT_MANAGER ./hack/e2e-remote.sh || status=$?
fi
if [ "$status" != 0 ]; then
  kind export logs --name "$CLUSTER" "$CACHE_ROOT/kind-logs" >&2 || true
  log "the suite failed: the cluster's logs are in $CACHE_ROOT/kind-logs"
fi
if [ "${KIND_KEEP:-0}" != 1 ]; then
  kind delete cluster --name "$CLUSTER" >&2
  rm -f "$KUBECONFIG_OUT"
fi
exit "$status"
