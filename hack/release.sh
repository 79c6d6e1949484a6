#!/usr/bin/env bash
# Renders the release manifests: one YAML per certificate mode, with the
# images of VERSION, into DIST (default dist/):
#   dist/install-self-signed.yaml   dist/install-cert-manager.yaml
# They are what `kubectl apply -k manifests/overlays/<mode>` installs, with
# image tags and the app.kubernetes.io/version label of this version. The
# images themselves are pushed by the release workflow (make docker-build).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${VERSION:?set VERSION (make release sets it from git describe)}"
DIST=${DIST:-dist}
KUBECTL=${KUBECTL:-$(./hack/build-binaries.sh | tail -n1)/kubectl}
mkdir -p "$DIST"
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
  - {name: ghcr.io/rook-mgr/mgr-webhook, newTag: "$VERSION"}
  - {name: ghcr.io/rook-mgr/mgr-bootstrap, newTag: "$VERSION"}
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
