#!/usr/bin/env bash
# Generates RBAC and webhook configurations from the code's markers into
# <out>/ (default: manifests/, in place), then the Helm chart's
# templates/generated.yaml from the kustomize overlays (hack/gen-chart).
# verify mode generates into a temp dir and fails when the committed files
# differ.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-write}
out=manifests
if [ "$mode" = verify ]; then
  out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
fi
gen() { ./hack/controller-gen.sh "$@"; }
gen rbac:roleName=mgr-webhook paths=./webhook/... output:rbac:artifacts:config="$out/base/webhook/generated"
gen webhook paths=./webhook/... output:webhook:artifacts:config="$out/base/webhook/generated"
gen rbac:roleName=mgr-bootstrap paths=./bootstrap/... output:rbac:artifacts:config="$out/base/bootstrap/generated"
gen rbac:roleName=mgr-metrics-auth paths=./internal/securemetrics/... output:rbac:artifacts:config="$out/base/metrics-auth/generated"
gen rbac:roleName=mgr-webhook-certs paths=./certs/... output:rbac:artifacts:config="$out/overlays/self-signed/generated"
gen rbac:roleName=mgr-policy paths=./policy/... output:rbac:artifacts:config="$out/base/policy/generated"
gen crd paths=./api/... output:crd:artifacts:config="$out/base/policy/generated"
# DeepCopy of the API types, in place (verify: git diff below).
gen object:headerFile=hack/boilerplate.go.txt paths=./api/...
# The chart renders from the committed overlays: in verify mode the markers'
# output above has been compared first, so a drift is reported where it is.
kubectl=${KUBECTL:-$(./hack/build-binaries.sh | tail -n1)/kubectl}
chart=charts/mgr-webhook/templates/generated.yaml
readme=charts/mgr-webhook/README.md
[ "$mode" = verify ] && chart_out=$out/generated.yaml || chart_out=$chart
[ "$mode" = verify ] && readme_out=$out/README.md || readme_out=$readme
go run ./hack/gen-chart -kubectl "$kubectl" -out "$chart_out" -readme "$readme_out"
if [ "$mode" = verify ]; then
  status=0
  for f in base/webhook/generated/role.yaml base/webhook/generated/manifests.yaml base/bootstrap/generated/role.yaml base/metrics-auth/generated/role.yaml overlays/self-signed/generated/role.yaml base/policy/generated/role.yaml base/policy/generated/mgr.ceph.rook.io_mgrpolicies.yaml base/policy/generated/mgr.ceph.rook.io_cephreleases.yaml; do
    if ! diff -u "manifests/$f" "$out/$f"; then
      echo "manifests/$f is out of date with the code's markers: run make manifests" >&2
      status=1
    fi
  done
  if ! git diff --exit-code -- api/v1alpha1/zz_generated.deepcopy.go; then
    echo "the DeepCopy functions are out of date with the API types: run make manifests" >&2
    status=1
  fi
  if ! diff -u "$chart" "$chart_out"; then
    echo "$chart is out of date with manifests/: run make manifests" >&2
    status=1
  fi
  if ! diff -u "$readme" "$readme_out"; then
    echo "$readme is out of date with the chart's values.yaml: run make manifests" >&2
    status=1
  fi
  exit $status
fi
echo "generated RBAC and webhook configurations under manifests/, and $chart"
