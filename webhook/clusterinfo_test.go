// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// A namespaced cache answers for its namespaces only, and says so: a request
// from elsewhere (a webhook configuration wider than the install) names the
// served namespaces and the value to change, not missing cluster objects.
func TestNamespacedCacheServesItsNamespacesOnly(t *testing.T) {
	c, err := NewClusterInfoCache(&rest.Config{Host: "https://127.0.0.1:1"}, "ceph-b", "ceph-a")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.byNamespace) != 2 {
		t.Fatalf("%d informer sets, want one per namespace", len(c.byNamespace))
	}
	_, err = c.Lookup("kube-public")
	var missing *MissingClusterObjectsError
	if !errors.As(err, &missing) || len(missing.Served) != 2 {
		t.Fatalf("Lookup outside the namespaces: %v", err)
	}
	for _, want := range []string{`"kube-public"`, "ceph-a, ceph-b", "cephNamespaces", "--namespaces"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, ok := c.MgrDeployment("kube-public", "rook-ceph-mgr-a"); ok {
		t.Error("a mgr found outside the namespaces")
	}
	// A served namespace is looked up in its own informers (empty here).
	if _, err := c.Lookup("ceph-a"); !errors.As(err, &missing) || len(missing.Served) > 0 || len(missing.Missing) != 2 {
		t.Errorf("Lookup in a served namespace: %v", err)
	}

	all, err := NewClusterInfoCache(&rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := all.Lookup("kube-public"); !errors.As(err, &missing) || len(missing.Served) > 0 {
		t.Errorf("a cluster-wide cache refused a namespace as not served: %v", err)
	}
}
