#!/usr/bin/env bash
# Builds a kind node image with no container registry: everything kind's own
# images hold, made here. Prints the image's name on stdout's last line.
#
#   - the root file system: Debian bookworm (debootstrap), whose systemd 252
#     still boots on a cgroup v1 host (trixie's refuses v1);
#   - kind's node files (entrypoint, units, containerd config) from the kind
#     module in the Go module cache, never copied into this repository;
#   - containerd (hack/node.sh containerd), kubelet, kubeadm, kubectl
#     (hack/build-binaries.sh, the same build as the control plane's);
#   - the images kubeadm runs, preloaded in the node's containerd under the
#     names `kubeadm config images list` prints: one image of the static
#     control-plane binaries (kube-apiserver, -controller-manager,
#     -scheduler, kube-proxy with nft, etcd), CoreDNS and a pause of our own.
#
# The image is named kindest-local/node:<kubernetes version>-<hash of its
# recipe>: built once per recipe, reused while it is in Docker.
#
# Where images can be pulled, kind's stock node image is the better choice:
# hack/e2e-kind.sh uses this one only when KIND_NODE_IMAGE=local (the default
# when kindest/node cannot be had).
set -euo pipefail
cd "$(dirname "$0")/.."

KIND_VERSION=${KIND_VERSION:-v0.33.0}
COREDNS_VERSION=${COREDNS_VERSION:-} # default: the one kubeadm names
CACHE_ROOT=${MGR_WEBHOOK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mgr-webhook}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages=systemd,systemd-sysv,dbus,iptables,nftables,conntrack,iproute2,ethtool,kmod,util-linux,mount,procps,jq,ca-certificates,libseccomp2,runc,containernetworking-plugins

log() { printf '[kind-image] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

k8s_version=$(./hack/build-binaries.sh --kube-version)
recipe=$( { cat "$0"; echo "$KIND_VERSION $COREDNS_VERSION $packages $k8s_version"; } | sha256sum | cut -c1-12)
name=kindest-local/node:$k8s_version-$recipe
if docker image inspect "$name" >/dev/null 2>&1; then
  log "$name: in Docker"
  echo "$name"
  exit 0
fi

assets=$(WITH_NODE=1 WITH_KUBEADM=1 ./hack/build-binaries.sh | tail -n1)
ctrd=$(./hack/node.sh containerd | tail -n1)
kind_dir=$(go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')
files=$kind_dir/images/base/files
[ -d "$files" ] || die "kind $KIND_VERSION has no images/base/files"

work=$CACHE_ROOT/kind-image.work
rm -rf "$work"; mkdir -p "$work"
cleanup() {
  [ -n "${builder:-}" ] && docker rm -f "$builder" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

# The root file system, cached by its package list.
base=$CACHE_ROOT/kind-rootfs-bookworm-$(echo "$packages" | sha256sum | cut -c1-12).tar
if [ ! -f "$base" ]; then
  command -v debootstrap >/dev/null || ./hack/install-deps.sh rootfs >&2
  log "debootstrap bookworm (minbase + $packages)"
  debootstrap --variant=minbase --include="$packages" bookworm "$work/debootstrap" "$mirror" >&2
  rm -rf "$work/debootstrap"/var/cache/apt/archives/*.deb "$work/debootstrap"/var/lib/apt/lists/*
  tar -C "$work/debootstrap" -cf "$base.tmp" .
  mv "$base.tmp" "$base"
  rm -rf "$work/debootstrap"
fi
root=$work/root
mkdir -p "$root"
tar -C "$root" -xf "$base"

# kind's files, as its base image's Dockerfile lays them out.
install -m 0755 "$files"/usr/local/bin/* "$root/usr/local/bin/"
cp -r "$files/kind" "$root/kind"
chmod -R u+w,go-w "$root/kind"; chmod 0755 "$root"/kind/bin/*
install -m 0644 "$files/etc/crictl.yaml" "$root/etc/"
for d in containerd default sysctl.d systemd/system systemd/system/kubelet.service.d; do
  mkdir -p "$root/etc/$d"
  find "$files/etc/$d" -maxdepth 1 -type f -exec install -m 0644 {} "$root/etc/$d/" \;
done
# This host's root lacks CAP_SYS_RESOURCE (a microVM): a negative
# oom_score_adj fails runc's init and systemd's start of containerd.
sed -i 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' "$root/etc/containerd/config.toml"
mkdir -p "$root/etc/systemd/system/containerd.service.d"
printf '[Service]\nOOMScoreAdjust=0\n' > "$root/etc/systemd/system/containerd.service.d/10-oom.conf"
sandbox=$(sed -n 's/^ *sandbox_image *= *"\(.*\)"/\1/p' "$root/etc/containerd/config.toml")
(
  cd "$root"
  find lib/systemd/system/sysinit.target.wants/ -name systemd-tmpfiles-setup.service -delete
  rm -f lib/systemd/system/multi-user.target.wants/* etc/systemd/system/*.wants/* \
    lib/systemd/system/local-fs.target.wants/* lib/systemd/system/sockets.target.wants/*udev* \
    lib/systemd/system/sockets.target.wants/*initctl* lib/systemd/system/basic.target.wants/*
  echo ReadKMsg=no >> etc/systemd/journald.conf
  ln -sf /usr/lib/systemd/systemd sbin/init
  mkdir -p etc/kubernetes/manifests opt/cni
  ln -sfn /usr/lib/cni opt/cni/bin
)
systemctl --root="$root" enable kubelet.service containerd.service undo-mount-hacks.service >/dev/null 2>&1
systemctl --root="$root" mask systemd-binfmt.service >/dev/null 2>&1
install -m 0755 "$ctrd"/containerd "$ctrd"/ctr "$ctrd"/containerd-shim-runc-v2 "$root/usr/local/bin/"
install -m 0755 "$assets"/kubelet "$assets"/kubeadm "$assets"/kubectl "$root/usr/bin/"
# As kind's base image makes it: ctr's default spec, the hook that mounts
# the node's product_name/uuid into containers, no rlimits.
"$ctrd/ctr" oci spec | python3 -c '
import json, sys
spec = json.load(sys.stdin)
spec.setdefault("hooks", {}).setdefault("createContainer", []).append({"path": "/kind/bin/mount-product-files.sh"})
spec["process"].pop("rlimits", None)
json.dump(spec, sys.stdout, indent=2)' > "$root/etc/containerd/cri-base.json"
echo "$k8s_version" > "$root/kind/version"
# Run before kind's entrypoint: a node that Docker started unprivileged
# (hack/kind/docker, on a host that cannot give --privileged) has its cgroup
# hierarchies mounted read-only; the kubelet and containerd write there.
cat > "$root/usr/local/bin/writable-cgroups" <<'SH'
#!/bin/sh
set -e
awk '$3 ~ /^(cgroup|cgroup2)$/ || $2 == "/sys/fs/cgroup" {print $2, $4}' /proc/mounts |
while read -r dir opts; do
  case ,$opts, in *,ro,*) mount -o remount,bind,rw "$dir" ;; esac
done
exec "$@"
SH
chmod 0755 "$root/usr/local/bin/writable-cgroups"

# The images kubeadm runs.
mapfile -t wanted < <("$assets/kubeadm" config images list --kubernetes-version "$k8s_version")
image_of() { printf '%s\n' "${wanted[@]}" | grep "/$1:" || die "kubeadm names no $1 image"; }
coredns_image=$(image_of coredns)
coredns_version=${COREDNS_VERSION:-${coredns_image##*:}}
coredns_bin=$CACHE_ROOT/coredns-$coredns_version
if [ ! -x "$coredns_bin" ]; then
  log "coredns $coredns_version: building from the Go module proxy"
  GOBIN="$work/gobin" CGO_ENABLED=0 go install -trimpath -ldflags='-s -w' "github.com/coredns/coredns@$coredns_version"
  mv "$work/gobin/coredns" "$coredns_bin"
fi
# import <dir> <entrypoint json> <names...>: one image of dir, under every name.
import() {
  local dir=$1 entry=$2 first=$3; shift 3
  tar -C "$dir" -c . | docker import --change "ENTRYPOINT $entry" - "$first" >/dev/null
  for n in "$@"; do docker tag "$first" "$n"; done
}
mkdir -p "$work/cp/usr/local/bin" "$work/cp/etc" "$work/pause" "$work/coredns/etc"
for b in kube-apiserver kube-controller-manager kube-scheduler kube-proxy etcd; do
  cp "$assets/$b" "$work/cp/usr/local/bin/"
done
# kube-proxy's nftables mode runs nft: it and its libraries from the node's
# root file system.
(cd "$root" && cp -a --parents usr/sbin/nft "$work/cp")
chroot "$root" ldd /usr/sbin/nft | awk '$3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | while read -r lib; do
  (cd "$root" && cp -aL --parents ".$lib" "$work/cp")
done
printf 'root:x:0:0:root:/root:/sbin/nologin\n' > "$work/cp/etc/passwd"
cp "$coredns_bin" "$work/coredns/coredns"
CGO_ENABLED=0 go -C test build -trimpath -ldflags='-s -w' -o "$work/pause/pause" ./e2e/node/pause
cp_names=()
for n in kube-apiserver kube-controller-manager kube-scheduler kube-proxy etcd; do cp_names+=("$(image_of "$n")"); done
import "$work/cp" '["/bin/false"]' "${cp_names[@]}"
import "$work/coredns" '["/coredns"]' "$coredns_image"
import "$work/pause" '["/pause"]' "$(image_of pause)" "$sandbox"
images=("${cp_names[@]}" "$coredns_image" "$(image_of pause)" "$sandbox")
docker save "${images[@]}" > "$work/images.tar"

# The node image, then its containerd given the images (kind's own node
# image build does the same: a node container, containerd in it, ctr import,
# commit).
tar -C "$root" -c . | docker import \
  --change 'ENV container=docker' \
  --change 'ENV KIND_EXPERIMENTAL_CONTAINERD_SNAPSHOTTER=overlayfs' \
  --change 'ENTRYPOINT ["/usr/local/bin/writable-cgroups", "/usr/local/bin/entrypoint", "/sbin/init"]' - "$name.base" >/dev/null
builder=$(docker run -d --entrypoint=sleep "$name.base" infinity)
docker cp "$work/images.tar" "$builder:/images.tar"
docker exec "$builder" bash -c 'containerd >/var/log/containerd-build.log 2>&1 &
  for _ in $(seq 100); do [ -S /run/containerd/containerd.sock ] && break; sleep 0.1; done
  ctr --namespace=k8s.io images import --label=io.cri-containerd.pinned=pinned --no-unpack --all-platforms /images.tar >&2 &&
  ctr --namespace=k8s.io images ls -q >&2 && rm /images.tar && pkill containerd && sleep 1' ||
  die "could not preload the images into the node's containerd"
docker commit \
  --change 'ENV container=docker' \
  --change 'ENV KIND_EXPERIMENTAL_CONTAINERD_SNAPSHOTTER=overlayfs' \
  --change 'ENTRYPOINT ["/usr/local/bin/writable-cgroups", "/usr/local/bin/entrypoint", "/sbin/init"]' \
  --change 'CMD []' "$builder" "$name" >/dev/null
docker rm -f "$builder" >/dev/null; builder=
docker rmi "$name.base" "${images[@]}" >/dev/null
log "$name built"
echo "$name"
