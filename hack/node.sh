#!/usr/bin/env bash
# A real node on this machine, joined to a running control plane: containerd
# (built from the Go module proxy), Debian's runc and CNI plugins (bridge +
# host-local), kubelet and kube-proxy (hack/build-binaries.sh, WITH_NODE=1).
# No registry is reachable, so images are made here from root file systems
# (umoci) and imported into containerd: a pause image of our own
# (test/e2e/node/pause), and Ceph from Debian (hack/ceph-release.sh) as
# quay.io/ceph/ceph:<its version> so a mgr pod runs without a pull.
#
#   KUBECONFIG=... hack/node.sh up      # start; prints the node's name (the
#                                       # Ceph image's is in NODE_DIR/ceph-image)
#   hack/node.sh load <tag>             # the project's images from this
#                                       # checkout, as kind load would:
#                                       # ghcr.io/rook-mgr/mgr-webhook:<tag>
#                                       # and mgr-bootstrap:<tag> (the Ceph
#                                       # image + the controller, as the
#                                       # Dockerfile builds them)
#   hack/node.sh down                   # stop; leaves no process, mount,
#                                       # containerd state or network device
#
# KUBELET_CLIENT_CA: the CA of the client certificate the API server presents
# to kubelets (--kubelet-client-certificate), so that kubectl exec and logs
# reach this node's pods; without it the kubelet serves no one.
#
# Root only. The kernel here has cgroup v1: kubelet runs with
# failCgroupV1: false and the cgroupfs driver. Everything lives under
# NODE_DIR (/tmp/mgr-node), the cached binaries under ~/.cache/mgr-webhook.
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_DIR=${NODE_DIR:-/tmp/mgr-node}
NODE_NAME=${NODE_NAME:-$(hostname -s)}
CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.2.9}
CEPH_SUITE=${CEPH_SUITE:-sid}
POD_CIDR=${POD_CIDR:-10.88.0.0/16}
CACHE_ROOT=${MGR_WEBHOOK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mgr-webhook}
ctrd_bin=$CACHE_ROOT/containerd-$CONTAINERD_VERSION
sock=$NODE_DIR/containerd/containerd.sock

log() { printf '[node] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

ctr() { "$ctrd_bin/ctr" --address "$sock" --namespace k8s.io "$@"; }

# spawn <name> <command...>: starts a daemon in the background, its pid and
# log under NODE_DIR.
spawn() {
  local name=$1; shift
  "$@" > "$NODE_DIR/$name.log" 2>&1 &
  echo $! > "$NODE_DIR/$name.pid"
}

# image <repository:tag> <rootfs> <entrypoint...>: an OCI image of rootfs,
# imported under that name; $IMAGE_USER (uid:gid), when set, its user.
image() {
  local ref=$1 rootfs=$2; shift 2
  local repo=${ref%:*} tag=${ref##*:}
  local layout=$NODE_DIR/images/${ref//[\/:]/_}
  rm -rf "$layout"
  umoci init --layout "$layout"
  umoci new --image "$layout:$tag"
  umoci insert --image "$layout:$tag" "$rootfs" /
  local args=()
  for e in "$@"; do args+=(--config.entrypoint "$e"); done
  if [[ -n ${IMAGE_USER:-} ]]; then args+=(--config.user "$IMAGE_USER"); fi
  umoci config --image "$layout:$tag" "${args[@]}" --config.workingdir /
  tar -C "$layout" -cf "$layout.tar" .
  # The layout names the image by its tag; --base-name gives the repository.
  ctr images import --base-name "$repo" "$layout.tar" >/dev/null
  rm -rf "$layout" "$layout.tar"
  # grep reads everything (no -q): under pipefail, a grep that exits at its
  # first match fails the pipeline when ctr writes on (SIGPIPE).
  ctr images ls -q | grep -x "$ref" >/dev/null || die "image $ref not in containerd after import"
  log "image $ref imported"
}

install_node_deps() {
  local pkgs=(runc containernetworking-plugins nftables iptables conntrack umoci) need=()
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null || need+=("$p")
  done
  if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >&2
  fi
  build_containerd
}

# build_containerd: containerd, its shim and ctr, cached by version.
build_containerd() {
  if [ ! -x "$ctrd_bin/containerd" ]; then
    log "building containerd $CONTAINERD_VERSION from the Go module proxy"
    mkdir -p "$ctrd_bin.tmp"
    GOBIN="$ctrd_bin.tmp" CGO_ENABLED=0 go install -tags 'no_btrfs no_devmapper no_zfs' \
      "github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD_VERSION" \
      "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION" \
      "github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD_VERSION"
    rm -rf "$ctrd_bin"; mv "$ctrd_bin.tmp" "$ctrd_bin"
  fi
}

up() {
  [ "$(id -u)" = 0 ] || die "a node needs root"
  : "${KUBECONFIG:?set KUBECONFIG to the admin kubeconfig of the control plane}"
  [ -e "$NODE_DIR" ] && die "$NODE_DIR exists: hack/node.sh down first"
  install_node_deps
  assets=$(WITH_NODE=1 ./hack/build-binaries.sh | tail -n1)
  ceph_bin=$(./hack/ceph-release.sh "$CEPH_SUITE" | tail -n1)
  ceph_root=$(dirname "$ceph_bin")/rootfs
  mkdir -p "$NODE_DIR"/{containerd,cni,kubelet,images,bin}
  cp "$KUBECONFIG" "$NODE_DIR/kubeconfig"
  ln -s "$assets/kubectl" "$NODE_DIR/bin/kubectl"
  echo "$NODE_NAME" > "$NODE_DIR/name"
  # Rook's mgr pods log to a hostPath under /var/lib/rook, which the runtime
  # creates; down removes it when this node made it.
  [ -e /var/lib/rook ] || touch "$NODE_DIR/made-var-lib-rook"
  # The node's address is the one it reaches the API server from: the API
  # server's own when it runs on this machine (internal/harness/testenv serves it at
  # that address), so both sides agree by construction.
  server=$("$assets/kubectl" --kubeconfig "$KUBECONFIG" config view --minify -o jsonpath='{.clusters[0].cluster.server}')
  server_host=${server#*://}; server_host=${server_host%%/*}; server_host=${server_host%:*}
  server_ip=$(getent ahostsv4 "$server_host" | awk 'NR == 1 {print $1}')
  node_ip=$(ip -4 route get "${server_ip:?cannot resolve the API server $server_host of $KUBECONFIG}" | sed -n 's/.* src \([0-9.]*\).*/\1/p')
  case $node_ip in
    ""|127.*) die "the API server ($server) is not reachable from a pod network: give it a non-loopback address" ;;
  esac
  ip netns list | awk '{print $1}' | sort > "$NODE_DIR/netns.before"

  cat > "$NODE_DIR/cni/10-bridge.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "mgr-node", "plugins": [
  {"type": "bridge", "bridge": "mgrnode0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}],
            "dataDir": "$NODE_DIR/cni/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
EOF
  cat > "$NODE_DIR/containerd/config.toml" <<EOF
version = 3
root = "$NODE_DIR/containerd/root"
state = "$NODE_DIR/containerd/state"
[grpc]
  address = "$sock"
[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = 'localhost/pause:node'
# Root here lacks CAP_SYS_RESOURCE (a microVM): a negative oom_score_adj, which
# the kubelet asks for sandboxes and Guaranteed pods, fails runc's init.
[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
[plugins.'io.containerd.cri.v1.runtime'.cni]
  bin_dirs = ['/usr/lib/cni']
  conf_dir = '$NODE_DIR/cni'
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = 'io.containerd.runc.v2'
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  SystemdCgroup = false
  BinaryName = '/usr/sbin/runc'
EOF
  spawn containerd env PATH="$ctrd_bin:$PATH" "$ctrd_bin/containerd" --config "$NODE_DIR/containerd/config.toml"
  for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
  [ -S "$sock" ] || die "containerd did not start: $NODE_DIR/containerd.log"

  CGO_ENABLED=0 go -C test build -o "$NODE_DIR/bin/pause-root/pause" ./e2e/node/pause
  image localhost/pause:node "$NODE_DIR/bin/pause-root" /pause
  version=$(PATH="$ceph_bin:$PATH" ceph --version | cut -d' ' -f3)
  image "quay.io/ceph/ceph:v$version" "$ceph_root" /bin/bash
  echo "quay.io/ceph/ceph:v$version" > "$NODE_DIR/ceph-image"

  cat > "$NODE_DIR/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$sock
failSwapOn: false
authentication: {anonymous: {enabled: false}, webhook: {enabled: true}, x509: {clientCAFile: "${KUBELET_CLIENT_CA:-}"}}
authorization: {mode: Webhook}
address: $node_ip
healthzPort: 0
readOnlyPort: 0
staticPodPath: ""
resolvConf: /etc/resolv.conf
podCIDR: $POD_CIDR
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
  spawn kubelet "$assets/kubelet" --config "$NODE_DIR/kubelet/config.yaml" --kubeconfig "$NODE_DIR/kubeconfig" \
    --root-dir "$NODE_DIR/kubelet/root" --cert-dir "$NODE_DIR/kubelet/pki" --hostname-override "$NODE_NAME" \
    --node-ip "$node_ip"
  spawn kube-proxy "$assets/kube-proxy" --kubeconfig "$NODE_DIR/kubeconfig" --hostname-override "$NODE_NAME" \
    --proxy-mode nftables --cluster-cidr "$POD_CIDR" --metrics-bind-address 127.0.0.1:10249 --healthz-bind-address 127.0.0.1:10256

  for _ in $(seq 120); do
    if "$assets/kubectl" --kubeconfig "$NODE_DIR/kubeconfig" get node "$NODE_NAME" \
        -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep True >/dev/null; then
      for d in containerd kubelet kube-proxy; do
        kill -0 "$(cat "$NODE_DIR/$d.pid")" 2>/dev/null || die "$d exited: $NODE_DIR/$d.log"
      done
      log "node $NODE_NAME Ready"
      echo "$NODE_NAME"
      return
    fi
    sleep 1
  done
  die "node $NODE_NAME not Ready within 2m: $NODE_DIR/kubelet.log"
}

load() {
  local tag=${1:?hack/node.sh load <tag>} ceph_image layout bins ldflags
  [ -S "$sock" ] || die "no node at $NODE_DIR: hack/node.sh up first"
  ceph_image=$(cat "$NODE_DIR/ceph-image")
  bins=$NODE_DIR/images/bin
  mkdir -p "$bins/webhook-root/etc" "$bins/webhook-root/tmp"
  ldflags="-s -w -X github.com/rook-mgr/mgr-webhook/version.Version=$tag -X github.com/rook-mgr/mgr-webhook/version.Revision=$(git rev-parse HEAD 2>/dev/null || true)"
  CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$bins/webhook-root/mgr-webhook" ./cmd/mgr-webhook
  CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$bins/mgr-bootstrap" ./cmd/mgr-bootstrap
  # The webhook's image is its static binary alone (the Dockerfile's is
  # distroless static), run as nonroot.
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$bins/webhook-root/etc/passwd"
  chmod 1777 "$bins/webhook-root/tmp"
  # run as nonroot: the manifests pin no uid, as the Dockerfile's USER.
  IMAGE_USER=65532:65532 image "ghcr.io/rook-mgr/mgr-webhook:$tag" "$bins/webhook-root" /mgr-webhook
  # The controller's image is the Ceph image (its ceph CLI) with the binary
  # as one more layer: the Ceph image as containerd holds it, one layer added.
  layout=$NODE_DIR/images/bootstrap
  rm -rf "$layout"; mkdir -p "$layout"
  ctr images export --platform linux/amd64 "$layout.tar" "$ceph_image"
  tar -C "$layout" -xf "$layout.tar"
  rm "$layout.tar"
  local base=${ceph_image##*:}
  umoci insert --image "$layout:$base" --tag "$tag" "$bins/mgr-bootstrap" /usr/local/bin/mgr-bootstrap
  umoci config --image "$layout:$tag" --config.user 167:167 --config.entrypoint /usr/local/bin/mgr-bootstrap --config.cmd ''
  umoci rm --image "$layout:$base"
  # ctr export named the Ceph image in an annotation umoci carried over to
  # the new tag: name it for what it now is.
  python3 - "$layout/index.json" "ghcr.io/rook-mgr/mgr-bootstrap:$tag" <<'PY'
import json, sys
path, name = sys.argv[1], sys.argv[2]
index = json.load(open(path))
for m in index["manifests"]:
    m.setdefault("annotations", {})["io.containerd.image.name"] = name
json.dump(index, open(path, "w"))
PY
  tar -C "$layout" -cf "$layout.tar" .
  local index
  index=$(cat "$layout/index.json")
  ctr images import "$layout.tar" >/dev/null
  rm -rf "$layout" "$layout.tar" "$bins"
  ctr images ls -q | grep -x "ghcr.io/rook-mgr/mgr-bootstrap:$tag" >/dev/null ||
    die "image mgr-bootstrap:$tag not in containerd after import; the layout's index: $index; containerd holds: $(ctr images ls -q | tr '\n' ' ')"
  log "image ghcr.io/rook-mgr/mgr-bootstrap:$tag imported (on $ceph_image)"
}

# stop <name>: ends a daemon spawn started and waits until it has exited
# (SIGKILL after 30 s).
stop() {
  [ -f "$NODE_DIR/$1.pid" ] || return 0
  local pid i
  pid=$(cat "$NODE_DIR/$1.pid")
  kill "$pid" 2>/dev/null || return 0
  for i in $(seq 300); do
    kill -0 "$pid" 2>/dev/null || return 0
    [ "$i" = 300 ] && kill -9 "$pid" 2>/dev/null
    sleep 0.1
  done
}

down() {
  [ -d "$NODE_DIR" ] || { log "no node at $NODE_DIR"; return; }
  NODE_NAME=$(cat "$NODE_DIR/name" 2>/dev/null || echo "$NODE_NAME")
  # The kubelet stops its pods through the runtime, which runs CNI DEL: the
  # pods' network namespaces, veths and masquerade rules go with them.
  if "$NODE_DIR/bin/kubectl" --kubeconfig "$NODE_DIR/kubeconfig" delete pods --all-namespaces \
      --field-selector "spec.nodeName=$NODE_NAME" --grace-period=0 --force --wait=false >/dev/null 2>&1; then
    for _ in $(seq 60); do
      [ -z "$(ctr tasks ls -q 2>/dev/null)" ] && break
      sleep 1
    done
  else
    log "the control plane did not answer: pods are stopped without their CNI teardown"
  fi
  for d in kube-proxy kubelet; do stop "$d"; done
  # Every container and sandbox left (delete -f kills and waits for each
  # task): the shims die with their tasks.
  if [ -S "$sock" ]; then
    for c in $(ctr tasks ls -q 2>/dev/null); do ctr tasks delete -f "$c" >/dev/null 2>&1 || true; done
    for c in $(ctr containers ls -q 2>/dev/null); do ctr containers delete "$c" 2>/dev/null || true; done
  fi
  pkill -9 -f "containerd-shim-runc-v2 .*-address $sock" 2>/dev/null || true
  stop containerd
  # Mounts the runtime left (rootfs overlays, shm, volumes), deepest first.
  awk -v d="$NODE_DIR" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done
  # What a pod whose CNI DEL did not run leaves: its network namespace (one
  # this node made: not there before up) and the bridge plugin's masquerade
  # rules, which carry our network's name.
  if [ -f "$NODE_DIR/netns.before" ]; then
    ip netns list | awk '$1 ~ /^cni-/ {print $1}' | sort | comm -13 "$NODE_DIR/netns.before" - | xargs -r -n1 ip netns del
  fi
  for ipt in iptables ip6tables; do
    "$ipt-save" -t nat 2>/dev/null | { grep -- '^-A POSTROUTING .*name: \\"mgr-node\\"' || true; } | sed 's/^-A /-D /' |
      while read -r rule; do eval "$ipt -t nat $rule" 2>/dev/null || true; done
    "$ipt-save" -t nat 2>/dev/null | sed -n 's/^-A \(CNI-[0-9a-f]*\) .*name: \\"mgr-node\\".*/\1/p' | sort -u |
      while read -r chain; do "$ipt" -t nat -F "$chain" 2>/dev/null; "$ipt" -t nat -X "$chain" 2>/dev/null || true; done
  done
  ip link del mgrnode0 2>/dev/null || true
  # The kubelet's own chains: canaries in every table it watches, the hint,
  # and KUBE-FIREWALL (it drops non-local packets to 127.0.0.0/8).
  for ipt in iptables ip6tables; do
    for t in mangle nat filter; do "$ipt" -t "$t" -X KUBE-KUBELET-CANARY 2>/dev/null || true; done
    "$ipt" -t mangle -X KUBE-IPTABLES-HINT 2>/dev/null || true
    for c in INPUT OUTPUT; do
      while "$ipt" -D "$c" -j KUBE-FIREWALL 2>/dev/null; do :; done
    done
    "$ipt" -F KUBE-FIREWALL 2>/dev/null || true
    "$ipt" -X KUBE-FIREWALL 2>/dev/null || true
  done
  nft delete table ip kube-proxy 2>/dev/null || true
  nft delete table ip6 kube-proxy 2>/dev/null || true
  [ -e "$NODE_DIR/made-var-lib-rook" ] && rm -rf /var/lib/rook
  rm -rf "$NODE_DIR"
  log "node down: $(awk -v d="$NODE_DIR" 'index($2, d) == 1' /proc/mounts | wc -l) mounts left"
}

case ${1:-} in
  up) up ;;
  load) shift; load "$@" ;;
  down) down ;;
  containerd) build_containerd; echo "$ctrd_bin" ;; # for hack/kind-image.sh
  *) echo "usage: hack/node.sh up|load <tag>|down|containerd" >&2; exit 2 ;;
esac
