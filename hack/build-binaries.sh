#!/usr/bin/env bash
# Builds the real Kubernetes control-plane binaries, etcd and kwok from the Go
# module proxy into a cache outside the repository, keyed by version, so that
# envtest, the e2e suite and `make demo` run against the genuine components.
# Already-built binaries are skipped. Prints the asset directory on stdout's
# last line; with --kube-version, only the Kubernetes version it builds.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}
if [[ ${1:-} == --kube-version ]]; then
  echo "$K8S_VERSION"
  exit 0
fi
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
CACHE_ROOT=${MGR_WEBHOOK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mgr-webhook}
# "-stamped": the Kubernetes binaries report their version (below); a cache
# of unstamped ones from before is not reused.
ASSETS=${CACHE_ROOT}/k8s-${K8S_VERSION}-etcd-${ETCD_VERSION}-kwok-${KWOK_VERSION}-stamped

log() { printf '[build-binaries] %s\n' "$*" >&2; }

mkdir -p "$ASSETS"
# One build at a time per cache: two (make manifests beside make test) would
# each write a binary's .tmp and move the other's away.
exec 9>"$ASSETS/.lock"
if ! flock -n 9; then
  log "waiting for another build-binaries on $ASSETS"
  flock 9
fi
staging_minor=v0.${K8S_VERSION#v1.}

# The version a Kubernetes binary reports (/version, --version): unstamped,
# a build from the module proxy says v0.0.0-master, which no kubeVersion
# constraint (the chart's, Helm's) accepts.
k8s_minor=${K8S_VERSION#v1.}; k8s_minor=${k8s_minor%%.*}
k8s_stamp=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  k8s_stamp+=" -X $pkg.gitVersion=${K8S_VERSION} -X $pkg.gitMajor=1 -X $pkg.gitMinor=${k8s_minor} -X $pkg.gitTreeState=clean"
done

# build_in_throwaway <module dir> <package> <binary> [ldflags]
build_in_throwaway() {
  local dir=$1 pkg=$2 bin=$3 extra=${4:-}
  if [ -x "$ASSETS/$bin" ]; then
    log "$bin: cached at $ASSETS/$bin"
    return
  fi
  log "$bin: building $pkg (this can take several minutes on a cold cache)"
  local start=$SECONDS
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w$extra" -o "$ASSETS/$bin.tmp" "$pkg")
  mv "$ASSETS/$bin.tmp" "$ASSETS/$bin"
  log "$bin: built in $((SECONDS - start))s"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# WITH_NODE=1 adds what a real node runs (kubelet, kube-proxy: hack/node.sh).
k8s_bins=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
[ "${WITH_NODE:-0}" = 1 ] && k8s_bins+=(kubelet kube-proxy)
# WITH_KUBEADM=1 adds kubeadm (a kind node: hack/kind-image.sh).
[ "${WITH_KUBEADM:-0}" = 1 ] && k8s_bins+=(kubeadm)
need_k8s=0
for b in "${k8s_bins[@]}"; do
  [ -x "$ASSETS/$b" ] || need_k8s=1
done
if [ "$need_k8s" = 1 ]; then
  log "preparing throwaway module for k8s.io/kubernetes@${K8S_VERSION}"
  mkdir -p "$work/k8s"
  modfile=$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
  {
    echo "module local/k8sbuild"
    echo
    echo "go 1.26"
    echo
    echo "require k8s.io/kubernetes ${K8S_VERSION}"
    echo
    echo "replace ("
    sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\t\1 => \1 '"${staging_minor}"'#p' "$modfile"
    echo ")"
  } > "$work/k8s/go.mod"
  echo 'package main' > "$work/k8s/tools.go"
  gets=()
  for b in "${k8s_bins[@]}"; do gets+=("k8s.io/kubernetes/cmd/$b@${K8S_VERSION}"); done
  (cd "$work/k8s" && GOFLAGS=-mod=mod go get "${gets[@]}" >&2)
  for b in "${k8s_bins[@]}"; do
    build_in_throwaway "$work/k8s" "k8s.io/kubernetes/cmd/$b" "$b" "$k8s_stamp"
  done
else
  log "${k8s_bins[*]}: cached"
fi

if [ ! -x "$ASSETS/etcd" ]; then
  mkdir -p "$work/etcd"
  (cd "$work/etcd" && printf 'module local/etcdbuild\n\ngo 1.26\n' > go.mod && \
    GOFLAGS=-mod=mod go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" >&2)
  build_in_throwaway "$work/etcd" go.etcd.io/etcd/server/v3 etcd
else
  log "etcd: cached"
fi

if [ ! -x "$ASSETS/kwok" ]; then
  log "kwok: go install sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}"
  GOBIN="$ASSETS" CGO_ENABLED=0 go install "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}"
else
  log "kwok: cached"
fi

# kwok's stage configs make fake nodes Ready and pods Running/Ready.
if [ ! -d "$ASSETS/kwok-stages" ]; then
  kwokdir=$(go mod download -json "sigs.k8s.io/kwok@${KWOK_VERSION}" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')
  mkdir -p "$ASSETS/kwok-stages.tmp"
  cp "$kwokdir"/kustomize/stage/node/fast/node-initialize.yaml \
     "$kwokdir"/kustomize/stage/node/heartbeat/node-heartbeat.yaml \
     "$kwokdir"/kustomize/stage/pod/fast/pod-ready.yaml \
     "$kwokdir"/kustomize/stage/pod/fast/pod-complete.yaml \
     "$kwokdir"/kustomize/stage/pod/fast/pod-delete.yaml "$ASSETS/kwok-stages.tmp/"
  chmod -R u+w "$ASSETS/kwok-stages.tmp"
  mv "$ASSETS/kwok-stages.tmp" "$ASSETS/kwok-stages"
fi

log "assets ready in $ASSETS"
echo "$ASSETS"
