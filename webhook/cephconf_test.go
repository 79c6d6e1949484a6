// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFSIDFromCephConf(t *testing.T) {
	for name, tc := range map[string]struct{ conf, want string }{
		"rook":                 {"[global]\nfsid = dcef92d7-1f6a-4b9d-8ed0-0037d537d00b\nmon host = v2:10.0.0.1:3300\n", "dcef92d7-1f6a-4b9d-8ed0-0037d537d00b"},
		"no spaces":            {"[global]\nfsid=abc\n", "abc"},
		"trailing comment":     {"[global]\n  fsid = abc ; set by rook\n", "abc"},
		"commented out":        {"[global]\n# fsid = abc\n;fsid = def\n", ""},
		"other section only":   {"[mon]\nfsid = abc\n[global]\nmon_host = x\n", ""},
		"none":                 {"", ""},
		"later global":         {"[client]\nkeyring = /k\n[ global ]\nfsid = abc\n", "abc"},
		"fsid-like key":        {"[global]\nfsid_extra = abc\n", ""},
		"value only a comment": {"[global]\nfsid=#abc\n", ""},
	} {
		t.Run(name, func(t *testing.T) {
			if got := fsidFromCephConf(tc.conf); got != tc.want {
				t.Errorf("fsid %q, want %q", got, tc.want)
			}
		})
	}
}

// TestKeepOnlyFSIDIsIdempotent: the informer may transform an object twice
// (a relist); the fsid must survive the second pass.
func TestKeepOnlyFSIDIsIdempotent(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rook-ceph-config", Namespace: "rook-ceph"},
		Data: map[string]string{"ceph.conf": "[global]\nfsid = abc\nmon_host = x\n"}}
	once, _ := keepOnlyFSID(cm)
	twice, _ := keepOnlyFSID(once)
	for i, o := range []any{once, twice} {
		got := o.(*corev1.ConfigMap)
		if got.Data[fsidKey] != "abc" || len(got.Data) != 1 {
			t.Errorf("pass %d: %v, want only the fsid abc", i+1, got.Data)
		}
	}
	forged := &corev1.ConfigMap{Data: map[string]string{"fsid": "forged"}}
	if got, _ := keepOnlyFSID(forged); got.(*corev1.ConfigMap).Data[fsidKey] != "" {
		t.Error("a ConfigMap without ceph.conf passed for one with an fsid")
	}
}
