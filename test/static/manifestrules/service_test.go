// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package manifestrules

import (
	"slices"
	"strings"
	"testing"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	klabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/rook-mgr/mgr-webhook/certs"
)

// TestWebhooksCallTheInstallsService: every webhook calls the install's own
// Service, in its namespace (wherever the install was moved), which selects
// the webhook's pods and reaches their port; the webhook serves a
// certificate the API server trusts for that Service: in self-signed mode
// its own (the Deployment rotates it), else cert-manager's Certificate for
// the Service's names, whose CA the cainjector copies in.
func TestWebhooksCallTheInstallsService(t *testing.T) {
	eachInstall(t, func(t *testing.T, in install) {
		d := &appsv1.Deployment{}
		svc := &corev1.Service{}
		for _, o := range in.objs {
			switch {
			case o.GetKind() == "Deployment" && o.GetName() == "mgr-webhook":
				convert(t, o.Object, d)
			case o.GetKind() == "Service" && o.GetName() == "mgr-webhook":
				convert(t, o.Object, svc)
			}
		}
		if d.Namespace != in.ns || svc.Namespace != in.ns {
			t.Fatalf("Deployment mgr-webhook in %q and Service mgr-webhook in %q, want both in %s", d.Namespace, svc.Namespace, in.ns)
		}
		if len(svc.Spec.Selector) == 0 || !klabels.SelectorFromSet(svc.Spec.Selector).Matches(klabels.Set(d.Spec.Template.Labels)) {
			t.Errorf("Service selector %v does not select the webhook's pods %v", svc.Spec.Selector, d.Spec.Template.Labels)
		}
		c := d.Spec.Template.Spec.Containers[0]
		reaches := false
		for _, p := range svc.Spec.Ports {
			reaches = reaches || p.Port == 443 && slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool {
				return cp.Name == p.TargetPort.StrVal || cp.ContainerPort == p.TargetPort.IntVal
			})
		}
		if !reaches {
			t.Errorf("Service ports %+v: none is 443 to a port of the webhook container %+v", svc.Spec.Ports, c.Ports)
		}
		for _, o := range in.objs {
			if o.GetKind() != "MutatingWebhookConfiguration" && o.GetKind() != "ValidatingWebhookConfiguration" {
				continue
			}
			cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			convert(t, o.Object, cfg)
			for _, w := range cfg.Webhooks {
				s := w.ClientConfig.Service
				if s == nil || s.Name != svc.Name || s.Namespace != in.ns || ptr.Deref(s.Port, 443) != 443 {
					t.Errorf("%s %s calls %+v, want Service %s/%s port 443", o.GetKind(), w.Name, s, in.ns, svc.Name)
				}
			}
			if in.selfSigned {
				continue
			}
			ref := o.GetAnnotations()["cert-manager.io/inject-ca-from"]
			ns, name, _ := strings.Cut(ref, "/")
			cert := in.get("Certificate", name)
			if ns != in.ns || cert == nil || cert.GetNamespace() != in.ns {
				t.Errorf("%s: inject-ca-from %q is not a Certificate of %s", o.GetKind(), ref, in.ns)
			}
		}
		if in.selfSigned {
			for _, arg := range []string{"--cert-mode=self-signed", "--leader-elect"} {
				if !slices.Contains(c.Args, arg) {
					t.Errorf("self-signed install: the webhook runs without %s (args %v)", arg, c.Args)
				}
			}
			return
		}
		if slices.Contains(c.Args, "--cert-mode=self-signed") {
			t.Errorf("cert-manager install: the webhook rotates its own certificates")
		}
		var serving *cmapi.Certificate
		for _, o := range in.objs {
			if o.GetKind() == "Certificate" {
				cert := &cmapi.Certificate{}
				convert(t, o.Object, cert)
				if slices.Contains(cert.Spec.DNSNames, certs.ServiceHosts(svc.Name, in.ns).DNSNames[0]) {
					serving = cert
				}
			}
		}
		if serving == nil {
			t.Fatalf("no Certificate names the Service %s/%s", in.ns, svc.Name)
		}
		if want := certs.ServiceHosts(svc.Name, in.ns).DNSNames; !slices.Equal(serving.Spec.DNSNames, want) {
			t.Errorf("Certificate %s dnsNames %v, want the Service's %v", serving.Name, serving.Spec.DNSNames, want)
		}
		mounted := slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
			return v.Secret != nil && v.Secret.SecretName == serving.Spec.SecretName
		})
		if !mounted {
			t.Errorf("the webhook mounts no Secret %s (the Certificate's)", serving.Spec.SecretName)
		}
	})
}
