#!/usr/bin/env bash
# Installs the Debian packages the tests and the demo need, when missing:
# make and git for the build, shellcheck for make lint, and a real Ceph (mon, mgr, CLI and the mgr
# modules the bootstrap controller enables) for the controller's tests, and debootstrap and
# bubblewrap for the other Ceph releases (hack/ceph-release.sh).
set -euo pipefail
# `install-deps.sh lint` installs only what make lint needs; `install-deps.sh
# rootfs` only what a root file system of another Debian suite needs (the
# kind node image, the Ceph releases of hack/ceph-release.sh).
case "${1:-}" in
  lint) pkgs=(make git shellcheck) ;;
  rootfs) pkgs=(debootstrap bubblewrap) ;;
  "") pkgs=(make git shellcheck ceph-mon ceph-mgr ceph-common ceph-mgr-dashboard ceph-mgr-rook python3-kubernetes python3-jsonpatch debootstrap bubblewrap) ;;
  *) echo "usage: $0 [lint|rootfs]" >&2; exit 2 ;;
esac
need=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null || need+=("$p")
done
if [ ${#need[@]} -eq 0 ]; then
  echo "[install-deps] all present: ${pkgs[*]}"
  exit 0
fi
echo "[install-deps] installing: ${need[*]}"
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${need[@]}"
