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
#
# A suite may need Python libraries swapped for older builds (below, with the
# reason); the root file system is rebuilt whenever its recipe (packages and
# swaps) changes.
set -euo pipefail

suite=${1:?usage: ceph-release.sh <debian suite: bookworm, trixie, sid>}
CACHE_ROOT=${MGR_WEBHOOK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mgr-webhook}
root=$CACHE_ROOT/ceph-$suite/rootfs
bin=$CACHE_ROOT/ceph-$suite/bin
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages=(ceph-mon ceph-mgr ceph-common ceph-base ceph-mgr-dashboard ceph-mgr-rook python3-kubernetes python3-jsonpatch)
tools=(ceph ceph-mon ceph-mgr ceph-authtool monmaptool)

# swaps: packages of another suite put in place of this suite's (dpkg
# --force-depends: they state an older Python; their modules are the stable
# ABI or pure Python). Reef's mgr runs each module in its own Python
# subinterpreter; trixie's cryptography and bcrypt are Rust (PyO3), which
# refuses subinterpreters ("PyO3 modules do not yet support subinterpreters"),
# so prometheus, dashboard and rook cannot load. Bullseye's builds predate
# their Rust rewrite (cffi on libssl1.1), as the CentOS builds in Ceph's own
# Reef images do. apt-get download checks them against bullseye's signed
# Release file. Tentacle (sid) runs them in one interpreter and needs none.
swap_suite="" swaps=()
case $suite in
  trixie)
    swap_suite=bullseye
    swaps=(python3-cryptography=3.3.2-1 python3-bcrypt=3.1.7-4 python3-openssl=20.0.1-1 libssl1.1=1.1.1w-0+deb11u1)
    ;;
esac
recipe="$suite: ${packages[*]}${swaps:+; from $swap_suite: ${swaps[*]}}"

log() { printf '[ceph-release %s] %s\n' "$suite" "$*" >&2; }

# inside runs a command as root inside the root file system.
inside() {
  bwrap --bind "$root" / --dev /dev --proc /proc --perms 1777 --tmpfs /tmp \
    --setenv DEBIAN_FRONTEND noninteractive --setenv PATH /usr/sbin:/usr/bin:/sbin:/bin -- "$@"
}

if [ -f "$CACHE_ROOT/ceph-$suite/ready" ] && [ "$(cat "$CACHE_ROOT/ceph-$suite/recipe" 2>/dev/null)" = "$recipe" ]; then
  log "cached: $(cat "$CACHE_ROOT/ceph-$suite/ready")"
else
  if ! command -v debootstrap >/dev/null || ! command -v bwrap >/dev/null; then
    "$(dirname "$0")/install-deps.sh" rootfs >&2
  fi
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
  if [ ${#swaps[@]} -gt 0 ]; then
    log "swapping in $swap_suite's ${swaps[*]}"
    echo "deb $mirror $swap_suite main" > "$root/etc/apt/sources.list.d/$swap_suite.list"
    inside apt-get -o Acquire::Check-Valid-Until=false update -q >&2
    mkdir -p "$root/var/cache/swaps"
    inside sh -c 'cd /var/cache/swaps && apt-get download "$@"' sh "${swaps[@]}" >&2
    inside sh -c 'dpkg -i --force-depends --force-downgrade /var/cache/swaps/*.deb' >&2
    rm -rf "$root/var/cache/swaps" "$root/etc/apt/sources.list.d/$swap_suite.list"
  fi
  inside apt-get clean
  version=$(inside ceph --version)
  echo "$recipe" > "$CACHE_ROOT/ceph-$suite/recipe"
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
# The controller's mgr map reader runs on the CLI's own Python and rados
# binding (ceph.PythonOf looks for this beside a ceph that is a wrapper).
cat > "$bin/ceph-python3.tmp" <<EOF
#!/bin/sh
# python3 of Debian $suite's Ceph, with its rados binding (hack/ceph-release.sh).
exec bwrap --bind '$root' / --dev /dev --proc /proc --bind /tmp /tmp --die-with-parent -- /usr/bin/python3 "\$@"
EOF
chmod +x "$bin/ceph-python3.tmp"
mv "$bin/ceph-python3.tmp" "$bin/ceph-python3"
echo "$bin"
