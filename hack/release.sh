#!/usr/bin/env bash
# Renders the release manifests: one YAML per certificate mode, with the
# images of VERSION, into DIST (default dist/):
#   dist/install-self-signed.yaml   dist/install-cert-manager.yaml
# They are what `kubectl apply -k manifests/overlays/<mode>` installs, with
# image tags and the app.kubernetes.io/version label of this version; with
# WEBHOOK_DIGEST and BOOTSTRAP_DIGEST (sha256:..., what the release workflow
# pushed) the images are named by tag and digest, so what runs is what was
# signed. The images themselves are pushed by the release workflow. With
# REGISTRY (default ghcr.io/rook-mgr), the images are REGISTRY/mgr-webhook
# and REGISTRY/mgr-bootstrap: images built from a checkout and pushed to a
# registry of your own (docs/install.md).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${VERSION:?set VERSION (make release sets it from git describe)}"
DIST=${DIST:-dist}
REGISTRY=${REGISTRY:-ghcr.io/rook-mgr}
KUBECTL=${KUBECTL:-$(./hack/build-binaries.sh | tail -n1)/kubectl}
mkdir -p "$DIST"
for d in WEBHOOK_DIGEST BOOTSTRAP_DIGEST; do
  v=${!d:-}
  if [ -n "$v" ] && ! [[ $v =~ ^sha256:[0-9a-f]{64}$ ]]; then
    echo "release: $d '$v' is not sha256:<64 hex>" >&2
    exit 1
  fi
done
digest() { # <name> <digest>: kustomize's images entry
  if [ -n "$2" ]; then
    echo "  - {name: ghcr.io/rook-mgr/$1, newName: \"$REGISTRY/$1\", newTag: \"$VERSION\", digest: \"$2\"}"
  else
    echo "  - {name: ghcr.io/rook-mgr/$1, newName: \"$REGISTRY/$1\", newTag: \"$VERSION\"}"
  fi
}
# kustomize takes relative paths only, so the wrapper lives in the checkout.
work=$(mktemp -d "$PWD/.release-XXXXXX"); trap 'rm -rf "$work"' EXIT
for mode in self-signed cert-manager; do
  cat > "$work/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../manifests/overlays/$mode]
labels:
  - pairs: {app.kubernetes.io/version: "$VERSION"}
images:
$(digest mgr-webhook "${WEBHOOK_DIGEST:-}")
$(digest mgr-bootstrap "${BOOTSTRAP_DIGEST:-}")
YAML
  out="$DIST/install-$mode.yaml"
  {
    echo "# mgr-webhook $VERSION, certificate mode $mode: kubectl apply --server-side -f install-$mode.yaml"
    [ "$mode" = cert-manager ] && echo "# Needs cert-manager (its CRDs and cainjector) installed first."
    "$KUBECTL" kustomize "$work"
  } > "$out.tmp"
  mv "$out.tmp" "$out"
  echo "$out"
done
