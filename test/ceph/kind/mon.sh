#!/bin/sh
# Runs mon "a" of a throwaway Ceph cluster, creating its store on first start:
# the Ceph that hack/e2e-kind.sh puts in a pod per namespace (ceph-mon.yaml),
# as Rook runs a mon: clients dial PUBLIC_ADDR (the Service's address), the
# daemon binds BIND_ADDR (the pod's).
#   FSID            the cluster's fsid
#   ADMIN_KEYRING   client.admin's keyring (imported into the mon's store)
#   PUBLIC_ADDR     the address in the monmap
#   BIND_ADDR       the address to bind (default PUBLIC_ADDR)
#   DATA            the mon's data directory
#   PORT_V2, PORT_V1  default 3300, 6789
set -eu
: "${FSID:?}" "${ADMIN_KEYRING:?}" "${PUBLIC_ADDR:?}" "${DATA:?}"
BIND_ADDR=${BIND_ADDR:-$PUBLIC_ADDR}
PORT_V2=${PORT_V2:-3300}
PORT_V1=${PORT_V1:-6789}
addrs="[v2:$PUBLIC_ADDR:$PORT_V2,v1:$PUBLIC_ADDR:$PORT_V1]"
mkdir -p "$DATA/store"
conf=$DATA/ceph.conf
cat > "$conf" <<CONF
[global]
fsid = $FSID
mon_host = $addrs
auth_cluster_required = cephx
auth_service_required = cephx
auth_client_required = cephx
auth_allow_insecure_global_id_reclaim = false
mon_warn_on_insecure_global_id_reclaim_allowed = false
mon_warn_on_pool_no_redundancy = false
mon_data_avail_warn = 1
[mon]
mon_data = $DATA/store
admin_socket = $DATA/mon.asok
log_file = /dev/null
log_to_stderr = true
CONF
if [ ! -e "$DATA/store/kv_backend" ]; then
  ceph-authtool --create-keyring "$DATA/mon.keyring" --gen-key -n mon. --cap mon 'allow *'
  ceph-authtool "$DATA/mon.keyring" --import-keyring "$ADMIN_KEYRING"
  monmaptool --create --fsid "$FSID" --addv a "$addrs" "$DATA/monmap"
  ceph-mon -c "$conf" --mkfs -i a --monmap "$DATA/monmap" --keyring "$DATA/mon.keyring"
  rm -f "$DATA/mon.keyring" "$DATA/monmap"
fi
# Rook's way behind a Service: advertise its address, bind the pod's (on the
# default ports; with others, run on the monmap's addresses).
if [ "$BIND_ADDR" != "$PUBLIC_ADDR" ]; then
  exec ceph-mon -c "$conf" -f -i a --public-addr "$PUBLIC_ADDR" --public-bind-addr "$BIND_ADDR"
fi
exec ceph-mon -c "$conf" -f -i a
