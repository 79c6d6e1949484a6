// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package certs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// Syncer writes the serving certificate of the Secret to CertDir whenever the
// Secret changes; the webhook server's certwatcher then serves it. It runs on
// every replica, so all serve what the Secret holds.
type Syncer struct {
	Clientset             kubernetes.Interface
	Namespace, SecretName string
	CertDir               string
}

// errNoCertificate: the Secret holds a CA but no serving certificate yet.
var errNoCertificate = errors.New("no serving certificate yet")

// NeedLeaderElection: every replica serves.
func (s *Syncer) NeedLeaderElection() bool { return false }

// WaitAndWrite waits until the Secret holds a usable certificate and writes
// it, so the webhook server finds its files when it starts. each, when set,
// runs before every look (the first certificate check).
func (s *Syncer) WaitAndWrite(ctx context.Context, timeout time.Duration, each func(context.Context)) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if each != nil {
			each(ctx)
		}
		sec, err := s.Clientset.CoreV1().Secrets(s.Namespace).Get(ctx, s.SecretName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			last = fmt.Errorf("Secret %s/%s not created yet", s.Namespace, s.SecretName)
			return false, nil
		}
		if err != nil {
			last = err
			return false, nil
		}
		if last = s.write(sec); last != nil {
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("no usable serving certificate: %w (last: %v)", err, last)
	}
	return nil
}

// Start watches the one Secret and rewrites the files on each change.
func (s *Syncer) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("cert-syncer")
	f := informers.NewSharedInformerFactoryWithOptions(s.Clientset, 10*time.Minute, informers.WithNamespace(s.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", s.SecretName).String()
		}))
	inf := f.Core().V1().Secrets().Informer()
	onChange := func(obj any) {
		if sec, ok := obj.(*corev1.Secret); ok {
			switch err := s.write(sec); {
			case errors.Is(err, errNoCertificate):
				log.Info("the Secret holds no serving certificate yet (a new CA settling); keeping the current one")
			case err != nil:
				log.Error(err, "serving certificate not written; keeping the current one")
			}
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onChange, UpdateFunc: func(_, n any) { onChange(n) }}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	<-ctx.Done()
	return nil
}

// write puts tls.crt and tls.key in CertDir when they differ, each by an
// atomic rename; an unusable pair is refused so a bad Secret never replaces a
// working certificate.
func (s *Syncer) write(sec *corev1.Secret) error {
	certPEM, keyPEM := sec.Data[TLSCertKey], sec.Data[TLSKeyKey]
	if len(certPEM) == 0 && len(keyPEM) == 0 {
		return fmt.Errorf("Secret %s/%s: %w", sec.Namespace, sec.Name, errNoCertificate)
	}
	cert, err := tlsPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("Secret %s/%s: %w", sec.Namespace, sec.Name, err)
	}
	// An expired (or not yet valid) certificate would fail every handshake:
	// keep serving the current one until the rotator replaces it.
	if now := time.Now(); now.After(cert.NotAfter) || now.Before(cert.NotBefore) {
		return fmt.Errorf("Secret %s/%s: the serving certificate is valid only from %s to %s", sec.Namespace, sec.Name,
			cert.NotBefore.Format(time.RFC3339), cert.NotAfter.Format(time.RFC3339))
	}
	if err := os.MkdirAll(s.CertDir, 0o700); err != nil {
		return err
	}
	for name, content := range map[string][]byte{TLSKeyKey: keyPEM, TLSCertKey: certPEM} {
		path := filepath.Join(s.CertDir, name)
		if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, content) {
			continue
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, content, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	return nil
}
