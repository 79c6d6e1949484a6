#!/usr/bin/env bash
# Runs the pinned controller-gen (built once into the cache outside the repo).
set -euo pipefail
VERSION=${CONTROLLER_GEN_VERSION:-v0.23.0}
CACHE_ROOT=${MGR_WEBHOOK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mgr-webhook}
BIN="$CACHE_ROOT/tools/controller-gen-$VERSION"
if [ ! -x "$BIN" ]; then
  echo "[controller-gen] installing sigs.k8s.io/controller-tools/cmd/controller-gen@$VERSION" >&2
  mkdir -p "$CACHE_ROOT/tools/bin-$VERSION"
  GOBIN="$CACHE_ROOT/tools/bin-$VERSION" go install "sigs.k8s.io/controller-tools/cmd/controller-gen@$VERSION"
  mv "$CACHE_ROOT/tools/bin-$VERSION/controller-gen" "$BIN"
fi
exec "$BIN" "$@"
