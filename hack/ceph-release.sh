#!/usr/bin/env bash
# Makes the Ceph release of a Debian suite runnable beside the host's own:
# a root file system of that suite (debootstrap, minbase) with its ceph-mon,
# ceph-mgr, CLI and the mgr modules the controller enables, cached outside the
# repository, and a directory of wrappers (ceph, ceph-mon, ceph-mgr,
# ceph-authtool, monmaptool) that run each tool inside it with bubblewrap:
# the suite's binaries, libraries and mgr modules, the host's /tmp (where the
# test clusters keep their files), network and processes. The host stays as
# it is. Put the wrapper directory first in PATH and every harness (cephtest,
# the controller's --ceph-binary ceph) runs that release. Prints the wrapper
# directory on stdout's last line.
#
#   hack/ceph-release.sh sid      # Tentacle (20.2) today
#   hack/ceph-release.sh trixie   # Reef (18.2)
set -euo pipefail

suite=${1:?usage: ceph-release.sh <debian suite: bookworm, trixie, sid>}
CACHE_ROOT=${MGR_WEBHOOK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mgr-webhook}
root=$CACHE_ROOT/ceph-$suite/rootfs
bin=$CACHE_ROOT/ceph-$suite/bin
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages=(ceph-mon ceph-mgr ceph-common ceph-base ceph-mgr-dashboard ceph-mgr-rook python3-kubernetes python3-jsonpatch)
tools=(ceph ceph-mon ceph-mgr ceph-authtool monmaptool)

log() { printf '[ceph-release %s] %s\n' "$suite" "$*" >&2; }

# inside runs a command as root inside the root file system.
inside() {
  bwrap --bind "$root" / --dev /dev --proc /proc --perms 1777 --tmpfs /tmp \
    --setenv DEBIAN_FRONTEND noninteractive --setenv PATH /usr/sbin:/usr/bin:/sbin:/bin -- "$@"
}

if [ -f "$CACHE_ROOT/ceph-$suite/ready" ]; then
  log "cached: $(cat "$CACHE_ROOT/ceph-$suite/ready")"
else
  for t in debootstrap bwrap; do
    command -v "$t" >/dev/null || { echo "$t is missing: run hack/install-deps.sh" >&2; exit 1; }
  done
  [ "$(id -u)" = 0 ] || { echo "making a root file system needs root" >&2; exit 1; }
  start=$SECONDS
  rm -rf "$CACHE_ROOT/ceph-$suite"
  mkdir -p "$CACHE_ROOT/ceph-$suite"
  log "debootstrap $suite from $mirror"
  debootstrap --variant=minbase "$suite" "$root.tmp" "$mirror" >&2
  mv "$root.tmp" "$root"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  # Package scripts would start services: there is no init here.
  ln -sf /bin/true "$root/usr/bin/systemctl"
  printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
  chmod +x "$root/usr/sbin/policy-rc.d"
  log "installing ${packages[*]}"
  # The archive these machines reach may be a snapshot older than its Valid-Until.
  inside apt-get -o Acquire::Check-Valid-Until=false update -q >&2
  inside apt-get install -y -q --no-install-recommends "${packages[@]}" >&2
  inside apt-get clean
  version=$(inside ceph --version)
  echo "$version" > "$CACHE_ROOT/ceph-$suite/ready"
  log "ready in $((SECONDS - start))s: $version"
fi

mkdir -p "$bin"
for t in "${tools[@]}"; do
  cat > "$bin/$t.tmp" <<EOF
#!/bin/sh
# $t of Debian $suite's Ceph (hack/ceph-release.sh).
exec bwrap --bind '$root' / --dev /dev --proc /proc --bind /tmp /tmp --die-with-parent -- /usr/bin/$t "\$@"
EOF
  chmod +x "$bin/$t.tmp"
  mv "$bin/$t.tmp" "$bin/$t"
done
echo "$bin"
