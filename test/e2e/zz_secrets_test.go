// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
)

// undecodableKeyMgr makes a Ceph namespace whose admin keyring holds a key
// the ceph CLI cannot decode (it then prints the key in its error: `type=key
// val=<key>: Malformed input`), with the mons of the suite's first cluster,
// and a mgr there; it returns the key once the controller's status shows it
// ran into that error.
func undecodableKeyMgr(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	raw := make([]byte, 28)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	// A valid base64 text that is no cephx key (a key decodes to 28 bytes
	// with a type and a length in front): the CLI prints it and fails.
	key := base64.StdEncoding.EncodeToString(raw)
	const ns = "ceph-undecodable-key"
	src := env.Namespaces[0]
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if err := env.Client.Create(ctx, nsObj); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), nsObj) })
	cfg, cm := &corev1.Secret{}, &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: src, Name: "rook-ceph-config"}, cfg); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: src, Name: "rook-ceph-config"}, cm); err != nil {
		t.Fatal(err)
	}
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rook-ceph-config"}, Data: cfg.Data},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rook-ceph-config"}, Data: cm.Data},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rook-ceph-admin-keyring"},
			Data: map[string][]byte{"keyring": []byte("[client.admin]\n\tkey = " + key + "\n")}},
	} {
		if err := env.Client.Create(ctx, o); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
	apply(t, env.manifest(t, ns, "a", nil))
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rook-ceph-mgr-a"}, d); err != nil {
			return false, nil
		}
		st, _ := mgrstatus.Of(d)
		last = st.LastError
		return strings.Contains(st.LastError, "val=<redacted>"), nil
	})
	if err != nil {
		t.Fatalf("the mgr with an undecodable admin key never reported the CLI's redacted error; last error %q", last)
	}
	t.Logf("the CLI's error, as the status quotes it: %s", last)
	return key
}

// TestZZSecretsNeverLeak runs last (its file sorts last): after the whole
// suite, at the components' most verbose log level, it collects every log
// line, Event, Deployment annotation and metrics scrape, and searches them for
// every secret the run made or used: the cephx keys Ceph holds (admin and
// every mgr), the dashboard passwords, and the private keys of the webhook's
// certificate Secrets, each raw and base64-encoded.
func TestZZSecretsNeverLeak(t *testing.T) {
	ctx := t.Context()
	secrets := map[string]string{} // value -> what it is
	add := func(what, v string) {
		if len(v) >= 16 {
			secrets[v] = what
			secrets[base64.StdEncoding.EncodeToString([]byte(v))] = what + " (base64)"
		}
	}
	add("the undecodable admin key", undecodableKeyMgr(t))
	keyRE := regexp.MustCompile(`"key": ?"([A-Za-z0-9+/=]{30,})"`)
	for _, ns := range append(append([]string(nil), env.Namespaces...), env.Teardown) {
		out, err := env.Ceph(ctx, ns, "auth", "ls")
		if err != nil {
			continue // the teardown cluster is gone by now
		}
		for _, m := range keyRE.FindAllStringSubmatch(string(out), -1) {
			add("a cephx key of "+ns, m[1])
		}
	}
	list := &corev1.SecretList{}
	if err := env.Client.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		for k, v := range s.Data {
			switch {
			case s.Name == "rook-ceph-dashboard-password":
				add(fmt.Sprintf("dashboard password %s/%s", s.Namespace, s.Name), string(v))
			case strings.Contains(k, "key") && strings.Contains(string(v), "PRIVATE KEY"):
				if b, _ := pem.Decode(v); b != nil {
					der := base64.StdEncoding.EncodeToString(b.Bytes)
					add(fmt.Sprintf("private key %s/%s[%s]", s.Namespace, s.Name, k), der[:64])
				}
			}
		}
	}
	if len(secrets) == 0 {
		t.Fatal("found no secrets to look for")
	}
	// The search must recognize a key where one is: every mgr keyring Secret
	// holds one of the cephx keys collected above.
	for _, s := range list.Items {
		if !strings.HasSuffix(s.Name, "-keyring") || s.Labels["app"] != "rook-ceph-mgr" {
			continue
		}
		found := false
		for v := range secrets {
			found = found || strings.Contains(string(s.Data["keyring"]), v)
		}
		if !found {
			t.Errorf("keyring Secret %s/%s holds none of the keys collected: the search would miss it", s.Namespace, s.Name)
		}
	}

	haystacks := map[string]string{}
	logs, err := env.Logs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for where, text := range logs {
		haystacks["log "+where] = text
	}
	for name, url := range env.MetricsURLs {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatalf("metrics of %s: %v", name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		haystacks["metrics "+name] = string(b)
	}
	var events strings.Builder
	evs := &eventsv1.EventList{}
	if err := env.Client.List(ctx, evs); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		fmt.Fprintln(&events, e.Reason, e.Note, e.Regarding.Name)
	}
	core := &corev1.EventList{}
	if err := env.Client.List(ctx, core); err != nil {
		t.Fatal(err)
	}
	for _, e := range core.Items {
		fmt.Fprintln(&events, e.Reason, e.Message)
	}
	haystacks["Events"] = events.String()
	var annotations strings.Builder
	ds := &appsv1.DeploymentList{}
	if err := env.Client.List(ctx, ds, client.MatchingLabels{"app": "rook-ceph-mgr"}); err != nil {
		t.Fatal(err)
	}
	for _, d := range ds.Items {
		for k, v := range d.Annotations {
			fmt.Fprintln(&annotations, k, v)
		}
	}
	haystacks["Deployment annotations"] = annotations.String()

	bytes, hits := 0, 0
	for where, text := range haystacks {
		bytes += len(text)
		for v, what := range secrets {
			if strings.Contains(text, v) {
				hits++
				t.Errorf("%s found in %s", what, where)
			}
		}
	}
	t.Logf("searched %d places (%d logs, %d metrics scrapes, %d Events, %d mgr Deployments), %d bytes, for %d secret forms: %d hits",
		len(haystacks), len(logs), len(env.MetricsURLs), len(evs.Items)+len(core.Items), len(ds.Items), bytes, len(secrets), hits)
	if len(logs) == 0 {
		t.Error("no component's log was searched")
	}
	if len(env.MetricsURLs) == 0 {
		t.Log("the metrics of a remote cluster are not reachable from here: logs, Events and annotations only")
	}
}
