// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package certs

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// RBAC of the self-signed mode: its two webhook configurations by name, its
// certificate Secret (create cannot be limited by name), its Events, and the
// Lease of the leader election that picks the one writer.
//
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;update,resourceNames=mgr-webhook
// +kubebuilder:rbac:groups="",namespace=mgr-webhook-system,resources=secrets,verbs=create
// +kubebuilder:rbac:groups="",namespace=mgr-webhook-system,resources=secrets,verbs=get;list;watch;update,resourceNames=mgr-webhook-certs
// +kubebuilder:rbac:groups=events.k8s.io,namespace=mgr-webhook-system,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",namespace=mgr-webhook-system,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=mgr-webhook-system,resources=leases,verbs=get;create;update

// Rotator keeps the certificate Secret valid and the webhook configurations'
// caBundle equal to its CA bundle. Run it on one replica (leader election);
// the Secret is written with optimistic concurrency, so a second writer can
// only lose a conflict, never corrupt it.
type Rotator struct {
	Client   client.Client
	Recorder recorder.EventRecorder // optional
	// Namespace and SecretName locate the certificate Secret.
	Namespace, SecretName string
	// WebhookConfigName names both the Mutating- and the
	// ValidatingWebhookConfiguration whose caBundle it keeps.
	WebhookConfigName string
	Hosts             Hosts
	Lifetimes         Lifetimes
	// Interval between checks; a hand-edited caBundle is restored by the next.
	Interval time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// NeedLeaderElection: only the leader writes.
func (r *Rotator) NeedLeaderElection() bool { return true }

// Start checks at once and then every Interval until ctx ends.
func (r *Rotator) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("cert-rotator")
	t := time.NewTicker(r.Interval)
	defer t.Stop()
	for {
		if err := r.Ensure(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "certificate check failed; retrying at the next interval")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Ensure makes one check: renew or repair what Plan says, then inject the CA
// bundle into the webhook configurations.
func (r *Rotator) Ensure(ctx context.Context) error {
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	s := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.SecretName}, s)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	configs, err := r.webhookConfigs(ctx)
	if err != nil {
		return err
	}
	data, reasons, err := Plan(now, s.Data, r.Hosts, r.Lifetimes, configs.bundles())
	if err != nil {
		return err
	}
	if reasons == nil && Settled(now, data, r.Lifetimes) {
		// Nothing to write and the replicas serve the Secret's certificate:
		// the bundles become the Secret's (a hand-edited one is restored, a
		// CA that left the Secret leaves them).
		return r.inject(ctx, configs, data[CACertKey])
	}
	// Otherwise the bundles only grow: each keeps verifying what the
	// replicas serve until they load the new Secret, and takes in its CA
	// before the Secret is written, so the Settle wait starts now.
	if err := r.trustAlso(ctx, configs, data[CACertKey]); err != nil {
		return err
	}
	if reasons == nil {
		return nil
	}
	return r.write(ctx, s, exists, data, reasons)
}

func (r *Rotator) write(ctx context.Context, s *corev1.Secret, exists bool, data map[string][]byte, reasons Reasons) error {
	log := logf.FromContext(ctx).WithName("cert-rotator")
	repair := exists && len(s.Data) > 0 && reasons.Repair()
	if !exists {
		s = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: r.SecretName, Namespace: r.Namespace, Labels: map[string]string{"app.kubernetes.io/name": contract.WebhookName}},
			Type:       corev1.SecretTypeOpaque,
			Data:       data,
		}
		if err := r.Client.Create(ctx, s); err != nil {
			return fmt.Errorf("creating Secret %s/%s: %w", r.Namespace, r.SecretName, err)
		}
	} else {
		s.Data = data
		// s carries the resourceVersion it was read at: a concurrent writer
		// makes this fail with a conflict instead of being overwritten.
		if err := r.Client.Update(ctx, s); err != nil {
			return fmt.Errorf("updating Secret %s/%s: %w", r.Namespace, r.SecretName, err)
		}
	}
	log.Info("webhook certificates written", "secret", r.SecretName, "why", reasons.String())
	if r.Recorder != nil {
		kind, reason := corev1.EventTypeNormal, "CertificateRotated"
		if repair {
			kind, reason = corev1.EventTypeWarning, "CertificateRegenerated"
		}
		r.Recorder.Eventf(s, nil, kind, reason, "Rotate", "%s", reasons)
	}
	return nil
}

// webhookConfigs are the installed Mutating- and ValidatingWebhookConfiguration
// of our name (either may be absent), with pointers to each webhook's
// clientConfig, read once per check for both the trust decision and the
// injection.
type webhookConfigs []webhookConfig

type webhookConfig struct {
	obj     client.Object
	clients []*admissionregistrationv1.WebhookClientConfig
}

func (r *Rotator) webhookConfigs(ctx context.Context) (webhookConfigs, error) {
	var out webhookConfigs
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: r.WebhookConfigName}, m); err == nil {
		var cs []*admissionregistrationv1.WebhookClientConfig
		for i := range m.Webhooks {
			cs = append(cs, &m.Webhooks[i].ClientConfig)
		}
		out = append(out, webhookConfig{m, cs})
	} else if !apierrors.IsNotFound(err) {
		return nil, err
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: r.WebhookConfigName}, v); err == nil {
		var cs []*admissionregistrationv1.WebhookClientConfig
		for i := range v.Webhooks {
			cs = append(cs, &v.Webhooks[i].ClientConfig)
		}
		out = append(out, webhookConfig{v, cs})
	} else if !apierrors.IsNotFound(err) {
		return nil, err
	}
	return out, nil
}

// bundles are the caBundles the webhooks carry.
func (w webhookConfigs) bundles() Trust {
	var t Trust
	for _, c := range w {
		for _, cc := range c.clients {
			t = append(t, cc.CABundle)
		}
	}
	return t
}

// inject sets caBundle on every webhook whose bundle differs.
func (r *Rotator) inject(ctx context.Context, configs webhookConfigs, bundle []byte) error {
	return r.injectEach(ctx, configs, func([]byte) []byte { return bundle })
}

// trustAlso adds to every webhook's caBundle the CAs of bundle it lacks.
func (r *Rotator) trustAlso(ctx context.Context, configs webhookConfigs, bundle []byte) error {
	return r.injectEach(ctx, configs, func(have []byte) []byte {
		out := have
		for rest := bundle; ; {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				return out
			}
			if !bundleHolds(out, b.Bytes) {
				out = append(bytes.Clone(out), pem.EncodeToMemory(b)...)
			}
		}
	})
}

// injectEach sets each webhook's caBundle to want(its bundle) where that
// differs, one update per configuration.
func (r *Rotator) injectEach(ctx context.Context, configs webhookConfigs, want func(have []byte) []byte) error {
	for _, c := range configs {
		changed := false
		for _, cc := range c.clients {
			if b := want(cc.CABundle); !bytes.Equal(cc.CABundle, b) {
				cc.CABundle, changed = b, true
			}
		}
		if !changed {
			continue
		}
		if err := r.Client.Update(ctx, c.obj); err != nil {
			return err
		}
		logf.FromContext(ctx).WithName("cert-rotator").Info("caBundle injected", "kind", fmt.Sprintf("%T", c.obj), "name", c.obj.GetName())
	}
	return nil
}
