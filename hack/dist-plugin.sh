#!/usr/bin/env bash
# Builds the kubectl plugin for the release: one archive per platform,
#   dist/kubectl-mgr_VERSION_OS_ARCH.tar.gz  (kubectl-mgr, LICENSE)
# for linux and darwin on amd64 and arm64, and dist/mgr.krew.yaml, the krew
# manifest naming each archive by its release URL and sha256. The binary is
# mgrctl under the plugin's name (cmd/kubectl-mgr): installed on the PATH,
# `kubectl mgr ...` runs it. PLATFORMS narrows the list (a test builds one).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${VERSION:?set VERSION (make release sets it from git describe)}"
DIST=${DIST:-dist}
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
REPO=${REPO:-https://github.com/rook-mgr/mgr-webhook}
REVISION=$(git rev-parse HEAD 2>/dev/null || true)
ldflags="-s -w -X github.com/rook-mgr/mgr-webhook/version.Version=$VERSION -X github.com/rook-mgr/mgr-webhook/version.Revision=$REVISION"
mkdir -p "$DIST"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

platforms_yaml=""
for p in $PLATFORMS; do
  os=${p%/*} arch=${p#*/}
  name="kubectl-mgr_${VERSION}_${os}_${arch}.tar.gz"
  mkdir -p "$work/$os-$arch"
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "$ldflags" -o "$work/$os-$arch/kubectl-mgr" ./cmd/kubectl-mgr
  cp LICENSE "$work/$os-$arch/"
  # Reproducible: fixed order, owner and time.
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='2026-01-01 00:00:00Z' \
    -C "$work/$os-$arch" -czf "$DIST/$name" kubectl-mgr LICENSE
  sum=$(sha256sum "$DIST/$name" | cut -d' ' -f1)
  platforms_yaml+="  - selector:
      matchLabels:
        os: $os
        arch: $arch
    uri: $REPO/releases/download/$VERSION/$name
    sha256: $sum
    bin: kubectl-mgr
    files:
      - from: kubectl-mgr
        to: .
      - from: LICENSE
        to: .
"
done

cat > "$DIST/mgr.krew.yaml" <<YAML
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: mgr
spec:
  version: $VERSION
  homepage: $REPO
  shortDescription: Complete, judge and check Ceph mgr Deployments as the mgr webhook would
  description: |
    kubectl mgr is mgrctl of the mgr webhook: it completes a minimal Ceph mgr
    Deployment (inject), judges it by the site's MgrPolicy field by field
    (validate), shows what the webhook would change in a file or a live mgr
    (diff), says why a live mgr was or was not completed (check), and lets
    every mgr go before an uninstall (release).
  platforms:
$platforms_yaml
YAML
echo "$DIST/mgr.krew.yaml"
