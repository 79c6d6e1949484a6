# Copyright 2026 The mgr-webhook Authors.
# SPDX-License-Identifier: Apache-2.0
#
# The mgr-bootstrap controller's long-lived reader of mgr maps: one librados
# connection per Ceph cluster, kept open, so that a `mgr stat` costs a mon
# round trip instead of a Python and librados start (about 0.4 s of CPU).
# Requests and answers are JSON lines on stdin and stdout; the admin key
# arrives in the request (a pipe), never in a file. Each request runs in its
# own thread: a cluster whose mon never answers holds only its own.
import json
import sys
import threading

import rados

out_lock = threading.Lock()
clusters = {}  # name -> [lock, handle or None, (mon_host, key)]
clusters_lock = threading.Lock()


def answer(msg):
    line = json.dumps(msg) + "\n"
    with out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def close(entry):
    if entry[1] is not None:
        try:
            entry[1].shutdown()
        except Exception:
            pass
        entry[1] = None


def handle(req):
    name = req["cluster"]
    with clusters_lock:
        entry = clusters.setdefault(name, [threading.Lock(), None, None])
    with entry[0]:
        if req.get("close"):
            close(entry)
            return {"id": req["id"]}
        creds = (req["mon_host"], req["key"])
        timeout = int(req["timeout"])
        if entry[1] is None or entry[2] != creds:
            close(entry)
            h = rados.Rados(rados_id="admin", conffile="/dev/null", conf={
                "mon_host": creds[0], "key": creds[1],
                "client_mount_timeout": str(timeout), "rados_mon_op_timeout": str(timeout),
                "ms_async_op_threads": "1", "log_to_stderr": "false", "err_to_stderr": "false",
            })
            try:
                h.connect(timeout=timeout)
            except Exception as e:
                try:
                    h.shutdown()
                except Exception:
                    pass
                return {"id": req["id"], "ret": -110, "unavailable": True, "err": type(e).__name__}
            entry[1], entry[2] = h, creds
        h = entry[1]
    try:
        ret, out, err = h.mon_command(req["cmd"], b"", timeout=timeout)
    except Exception as e:
        with entry[0]:
            if entry[1] is h:
                close(entry)
        return {"id": req["id"], "ret": -110, "unavailable": True, "err": type(e).__name__}
    return {"id": req["id"], "ret": ret, "out": out.decode("utf-8", "replace"), "err": err}


def serve(req):
    try:
        msg = handle(req)
    except Exception as e:
        msg = {"id": req.get("id", 0), "ret": -22, "err": type(e).__name__}
    answer(msg)


def main():
    answer({"id": 0, "ready": True})
    for line in sys.stdin:
        threading.Thread(target=serve, args=(json.loads(line),), daemon=True).start()


main()
