#!/usr/bin/env bash
# The e2e suite's remote mode (test/e2e with E2E_KUBECONFIG) on the cluster
# of KUBECONFIG, whose nodes already hold the project's images of
# E2E_IMAGE_TAG: every step but making the cluster and loading the images,
# which hack/e2e-kind.sh (kind) and test/e2e/node (a real kubelet on this
# machine, make e2e-node) do before calling it. It installs the release
# manifests (make release, in CERT_MODE), makes three namespaces throwaway
# Ceph clusters (one mon in a pod each, test/ceph/kind/ceph-mon.yaml, with Rook's
# cluster objects) and runs the suite against them; its mgr pods are real
# ceph-mgr containers.
#
#   hack/e2e-remote.sh              everything above
#   hack/e2e-remote.sh ceph <ns>    only make <ns> a throwaway Ceph cluster
#                                   (waits for nothing)
#
#   KUBECONFIG              the cluster (required)
#   E2E_IMAGE_TAG           the images' tag (default e2e)
#   CERT_MODE               cert-manager (installed first when missing, from
#                           CERT_MANAGER_URL) or self-signed
#   E2E_CEPH_IMAGE          the Ceph image of the mons and mgrs (default the
#                           one in test/ceph/kind/ceph-mon.yaml and the example mgr)
#   E2E_CONTROL_PLANE_CIDRS where the API server calls webhooks from,
#                           comma-separated (the NetworkPolicy's; default:
#                           the control-plane nodes' InternalIPs, or, with
#                           none labelled, any address)
#   E2E_GO_TEST_FLAGS       more go test flags (test/e2e/node: -tags node)
#   E2E_CEPH_NAMESPACES, E2E_TEARDOWN_NAMESPACE
#                           bring your own Ceph instead (e.g. Rook
#                           CephClusters): two namespaces with Rook's cluster
#                           objects, and a third, disposable one, which a test
#                           deletes whole
set -euo pipefail
cd "$(dirname "$0")/.."
: "${KUBECONFIG:?set KUBECONFIG to the cluster to test}"
export KUBECONFIG
TAG=${E2E_IMAGE_TAG:-e2e}
CERT_MODE=${CERT_MODE:-cert-manager}
CERT_MANAGER=${CERT_MANAGER_VERSION:-v1.21.2}
CERT_MANAGER_URL=${CERT_MANAGER_URL:-https://github.com/cert-manager/cert-manager/releases/download/$CERT_MANAGER/cert-manager.yaml}
KUBECTL=${KUBECTL:-$(command -v kubectl || true)}
[ -x "$KUBECTL" ] || { echo "kubectl is required (or KUBECTL=...)" >&2; exit 1; }
kubectl() { "$KUBECTL" "$@"; }
log() { printf '[e2e-remote] %s\n' "$*" >&2; }

# The Ceph image of the mons and mgrs.
CEPH_IMAGE=${E2E_CEPH_IMAGE:-$(sed -n 's/^ *image: *//p' test/ceph/kind/ceph-mon.yaml | head -n1)}

# cephx_key prints a new cephx secret of the key type the release of
# CEPH_IMAGE uses, as its ceph-authtool --gen-print-key does: base64 of type,
# creation time, length and random bytes. Tentacle (20) uses AES-256 keys
# (type 2, 32 bytes) and refuses AES-128 ones for authentication; earlier
# releases know only AES-128 (type 1, 16 bytes).
cephx_key() {
  python3 - "$CEPH_IMAGE" <<'PY'
import base64, os, re, struct, sys, time
m = re.search(r":v(\d+)\.", sys.argv[1])
if not m:
    sys.exit("the Ceph release of image %s: no :v<major>. tag" % sys.argv[1])
typ, n = (2, 32) if int(m.group(1)) >= 20 else (1, 16)
print(base64.b64encode(struct.pack("<HIIH", typ, int(time.time()), 0, n) + os.urandom(n)).decode())
PY
}

# ceph_cluster makes namespace $1 a throwaway Ceph cluster. Keys go through
# files, never a command line.
ceph_cluster() {
  local ns=$1 fsid ip files
  # A rerun on the same cluster keeps the clusters it made (new keys would
  # not match the running mon's store).
  if kubectl -n "$ns" get secret rook-ceph-mon >/dev/null 2>&1; then
    log "namespace $ns: already a Ceph cluster"
    return
  fi
  kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  sed "s|image: quay.io/ceph/ceph:.*|image: $CEPH_IMAGE|" test/ceph/kind/ceph-mon.yaml | kubectl -n "$ns" apply -f - >/dev/null
  ip=$(kubectl -n "$ns" get service rook-ceph-mon-a -o jsonpath='{.spec.clusterIP}')
  fsid=$(python3 -c 'import uuid; print(uuid.uuid4())')
  files=$(mktemp -d)
  (umask 077; printf '[client.admin]\n\tkey = %s\n\tcaps mds = "allow *"\n\tcaps mgr = "allow *"\n\tcaps mon = "allow *"\n\tcaps osd = "allow *"\n' "$(cephx_key)" > "$files/keyring")
  printf '[global]\nfsid = %s\nmon_host = [v2:%s:3300,v1:%s:6789]\nmon_initial_members = a\n' "$fsid" "$ip" "$ip" > "$files/ceph.conf"
  kubectl -n "$ns" create secret generic rook-ceph-mon --from-literal=fsid="$fsid"
  kubectl -n "$ns" create secret generic rook-ceph-config \
    --from-literal=mon_host="[v2:$ip:3300,v1:$ip:6789]" --from-literal=mon_initial_members=a
  kubectl -n "$ns" create secret generic rook-ceph-admin-keyring --from-file=keyring="$files/keyring"
  kubectl -n "$ns" create configmap rook-ceph-config --from-file=ceph.conf="$files/ceph.conf"
  kubectl -n "$ns" create configmap ceph-mon-a --from-file=mon.sh=test/ceph/kind/mon.sh --from-literal=public-addr="$ip"
  rm -rf "$files"
  log "namespace $ns: Ceph cluster $fsid, mon a at $ip"
}

if [ "${1:-}" = ceph ]; then
  ceph_cluster "${2:?hack/e2e-remote.sh ceph <namespace>}"
  exit 0
fi

for tool in python3 go; do command -v "$tool" >/dev/null || { echo "$tool is required" >&2; exit 1; }; done
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

if [ "$CERT_MODE" = cert-manager ] && ! kubectl get crd certificates.cert-manager.io >/dev/null 2>&1; then
  log "cert-manager $CERT_MANAGER"
  kubectl apply -f "$CERT_MANAGER_URL"
  kubectl -n cert-manager wait --for=condition=Available deploy --all --timeout=5m
fi

if [ -z "${E2E_CEPH_NAMESPACES:-}" ]; then
  served=ceph-west,ceph-east,ceph-teardown
else
  served=$E2E_CEPH_NAMESPACES,${E2E_TEARDOWN_NAMESPACE:-}
fi
log "the release manifests ($CERT_MODE) of $TAG, serving $served"
VERSION=$TAG DIST=$work KUBECTL=$KUBECTL ./hack/release.sh >/dev/null
# The release serves one Ceph namespace (rook-ceph, which must exist); the
# suite's are bound as the chart's cephNamespaces binds them: the RoleBindings
# of the Ceph namespace (*-ceph) copied into each, the list in both
# Deployments' CEPH_NAMESPACE, and every webhook and admission policy called
# there (the rollout below restarts both Deployments).
kubectl create namespace rook-ceph --dry-run=client -o yaml | kubectl apply -f - >/dev/null
cidrs=${E2E_CONTROL_PLANE_CIDRS:-}
if [ -z "$cidrs" ]; then
  for ip in $(kubectl get nodes -l node-role.kubernetes.io/control-plane -o jsonpath='{.items[*].status.addresses[?(@.type=="InternalIP")].address}'); do
    case $ip in *:*) cidrs+="${cidrs:+,}$ip/128" ;; *) cidrs+="${cidrs:+,}$ip/32" ;; esac
  done
  if [ -z "$cidrs" ]; then
    log "no node labelled node-role.kubernetes.io/control-plane: the webhook port admits any address (E2E_CONTROL_PLANE_CIDRS to narrow it)"
    cidrs=0.0.0.0/0
  fi
fi
log "the webhook port admits $cidrs"
# --force-conflicts: on a cluster kept from an earlier run (KIND_KEEP) the
# release takes back the fields this script's own set env and patches below
# changed, and they are made again.
sed "s#CONTROL-PLANE-CIDR#${cidrs%%,*}#" "$work/install-$CERT_MODE.yaml" | kubectl apply --server-side --force-conflicts -f -
rest=${cidrs#*,}
if [ "$rest" != "$cidrs" ]; then
  for cidr in ${rest//,/ }; do
    kubectl -n mgr-webhook-system patch networkpolicy mgr-webhook --type=json \
      -p "[{\"op\": \"add\", \"path\": \"/spec/ingress/0/from/-\", \"value\": {\"ipBlock\": {\"cidr\": \"$cidr\"}}}]" >/dev/null
  done
fi
for ns in ${served//,/ }; do
  kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  for rb in mgr-bootstrap-ceph mgr-webhook-ceph; do
    kubectl -n rook-ceph get rolebinding "$rb" -o json | python3 -c '
import json, sys
o = json.load(sys.stdin)
o["metadata"] = {"name": o["metadata"]["name"], "namespace": sys.argv[1], "labels": o["metadata"].get("labels", {})}
json.dump(o, sys.stdout)' "$ns" | kubectl apply -f - >/dev/null
  done
done
kubectl -n mgr-webhook-system set env deploy/mgr-bootstrap deploy/mgr-webhook "CEPH_NAMESPACE=$served" >/dev/null
# The In expression of each namespaceSelector (path: a kind's list of them).
in_patch() {
  python3 -c '
import json, sys
o, served, ops = json.load(sys.stdin), sys.argv[1].split(","), []
sels = [("/webhooks/%d/namespaceSelector" % i, w.get("namespaceSelector", {})) for i, w in enumerate(o.get("webhooks", []))]
if o["kind"] == "ValidatingAdmissionPolicy":
    sels.append(("/spec/matchConstraints/namespaceSelector", o["spec"]["matchConstraints"].get("namespaceSelector", {})))
for path, sel in sels:
    for j, e in enumerate(sel.get("matchExpressions", [])):
        if e["operator"] == "In" and e["key"] == "kubernetes.io/metadata.name":
            ops.append({"op": "replace", "path": "%s/matchExpressions/%d/values" % (path, j), "value": served})
if not ops:
    sys.exit("%s %s: no namespaceSelector names the Ceph namespace" % (o["kind"], o["metadata"]["name"]))
json.dump(ops, sys.stdout)' "$served"
}
for obj in mutatingwebhookconfiguration/mgr-webhook validatingwebhookconfiguration/mgr-webhook \
  validatingadmissionpolicy/mgr-policy validatingadmissionpolicy/mgr-workloads; do
  kubectl patch "$obj" --type=json -p "$(kubectl get "$obj" -o json | in_patch)" >/dev/null
done
kubectl -n mgr-webhook-system wait --for=condition=Available deploy --all --timeout=5m
# The suite's mgrs choose modules by annotation: the site policy must offer
# them (moduleChoices), as internal/harness/localcluster's SitePolicy does.
# The suite runs two mgrs of one cluster: on a cluster of one schedulable
# node (make e2e-node) they may share it, which the default policy's
# required anti-affinity forbids.
placement=
schedulable=$(kubectl get nodes --field-selector spec.unschedulable=false -o name | grep -c . || true)
if [ "$schedulable" -lt 2 ]; then
  log "$schedulable schedulable node(s): the site policy allows a cluster's mgrs on one node (placement.allowMultiplePerNode)"
  placement='placement: {allowMultiplePerNode: true}\n'
fi
policy=$(kubectl -n mgr-webhook-system get deployment mgr-webhook -o 'jsonpath={.spec.template.spec.volumes[?(@.name=="policy")].configMap.name}')
kubectl -n mgr-webhook-system patch configmap "$policy" --type merge \
  -p '{"data":{"policy.yaml":"apiVersion: mgr.ceph.rook.io/v1alpha1\nkind: Policy\nmoduleChoices: [orchestrator_cli, rook, prometheus, dashboard]\n'"$placement"'"}}'
kubectl -n mgr-webhook-system rollout restart deploy/mgr-webhook deploy/mgr-bootstrap
kubectl -n mgr-webhook-system rollout status deploy/mgr-webhook --timeout=5m
kubectl -n mgr-webhook-system rollout status deploy/mgr-bootstrap --timeout=5m
# A rollout is complete while the old replicas still drain, answering with the
# old policy: the suite starts once they are gone.
draining() { kubectl -n mgr-webhook-system get pods -l app.kubernetes.io/name=mgr-webhook -o jsonpath='{.items[*].metadata.deletionTimestamp}'; }
for _ in $(seq 300); do
  [ -z "$(draining)" ] && break
  sleep 1
done
[ -z "$(draining)" ] || { log "old webhook replicas still terminating after 5m"; exit 1; }

if [ -z "${E2E_CEPH_NAMESPACES:-}" ]; then
  for ns in ceph-west ceph-east ceph-teardown; do ceph_cluster "$ns"; done
  for ns in ceph-west ceph-east ceph-teardown; do
    kubectl -n "$ns" wait --for=condition=Available deploy/rook-ceph-mon-a --timeout=5m
  done
  E2E_CEPH_NAMESPACES=ceph-west,ceph-east E2E_TEARDOWN_NAMESPACE=ceph-teardown
fi
: "${E2E_TEARDOWN_NAMESPACE:?with E2E_CEPH_NAMESPACES, name a third, disposable Ceph namespace in E2E_TEARDOWN_NAMESPACE}"

log "e2e suite on $E2E_CEPH_NAMESPACES (teardown: $E2E_TEARDOWN_NAMESPACE)"
# shellcheck disable=SC2086 # E2E_GO_TEST_FLAGS is a list of flags
E2E_KUBECONFIG="$KUBECONFIG" E2E_CEPH_NAMESPACES="$E2E_CEPH_NAMESPACES" E2E_TEARDOWN_NAMESPACE="$E2E_TEARDOWN_NAMESPACE" \
  E2E_KUBECTL="$KUBECTL" go -C test test -count=1 -v -timeout=40m ${E2E_GO_TEST_FLAGS:-} ./e2e/
