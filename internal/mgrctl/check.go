// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mgrctl

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/rook-mgr/mgr-webhook/bootstrap"
	"github.com/rook-mgr/mgr-webhook/bootstrap/mgrstatus"
	"github.com/rook-mgr/mgr-webhook/certs"
	"github.com/rook-mgr/mgr-webhook/contract"
	"github.com/rook-mgr/mgr-webhook/mutate"
)

// finding is one line of check's answer.
type finding struct {
	ok   bool
	text string
}

// checkLive says why the webhooks did or did not act on a live mgr, as
// istioctl's check-inject does for sidecars: the configurations' selectors
// and conditions, the policy's exemptions, the cluster objects, the
// policy's verdict and whether completing it again would change it, the
// bootstrap phase, whether the installed caBundle verifies the certificate
// the webhook serves, and whether the API server can call the webhook.
// Exit 1 when something is wrong.
func (s *session) checkLive(ctx context.Context, ref string) error {
	d, cs, err := s.liveDeployment(ctx, ref)
	if err != nil {
		return err
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, s.namespace(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	var out []finding
	add := func(ok bool, format string, args ...any) {
		out = append(out, finding{ok, fmt.Sprintf(format, args...)})
	}

	mwc, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, contract.WebhookName, metav1.GetOptions{})
	var hook *admissionregistrationv1.MutatingWebhook
	switch {
	case err != nil:
		add(false, "MutatingWebhookConfiguration mgr-webhook: %v (is the webhook installed?)", err)
	default:
		for i := range mwc.Webhooks {
			if mwc.Webhooks[i].Name == "mutate.mgr.ceph.rook.io" {
				hook = &mwc.Webhooks[i]
			}
		}
		if hook == nil {
			add(false, "MutatingWebhookConfiguration mgr-webhook has no webhook mutate.mgr.ceph.rook.io")
		} else {
			out = append(out, selects(hook, d, ns)...)
		}
	}

	governed := contract.IsMgr(d)
	p, from, err := s.policy(ctx)
	if err != nil {
		return err
	}
	switch {
	case !contract.IsMgr(d):
		add(false, "label %s=%s missing: not a mgr Deployment, nothing completes or judges it", contract.LabelApp, contract.AppName)
	case p.Exempts(d.Namespace, d.Name):
		governed = false
		add(true, "exempt by %s: the webhook admits it as written and the controller leaves it alone", from)
	case contract.RookOwner(d) != nil:
		governed = false
		add(true, "owned by CephCluster %s: Rook's own mgr, left to Rook while that CephCluster lives (the webhook checks it), whose operator alone may change its pods", contract.RookOwner(d).Name)
	default:
		add(true, "governed by %s (%s)", from, p.Hash())
	}

	if governed {
		live, err := manifest(d)
		if err != nil {
			return err
		}
		in, _, err := s.injector(ctx, live)
		if err != nil {
			add(false, "the Ceph cluster of %s: %v", s.namespace(), err)
		} else {
			out2, docs, err := in.Inject(live)
			switch {
			case len(docs) == 1 && len(docs[0].Deny) > 0:
				add(false, "the policy would refuse it as it stands (a change to these fields is refused; the webhook ratchets what is unchanged): %v", docs[0].Deny.ToAggregate())
			case err != nil:
				add(false, "%v", err)
			case len(docs) == 1:
				verdict := "the policy admits it"
				if len(docs[0].Warnings) > 0 {
					verdict += ", with warnings: " + strings.Join(docs[0].Warnings, "; ")
				}
				add(true, "%s", verdict)
				stamp, stamped := mutate.StampOf(d)
				switch {
				case string(out2) == string(live):
					add(true, "complete: completed by %s under policy %s; completing it again changes nothing", stamp.Version, stamp.Policy)
				case !stamped:
					add(false, "never completed by the webhook (no %s annotation): it was written while the webhook was not called (see above); its next write completes it (mgrctl diff %s shows how)", contract.AnnotationCompletedBy, ref)
				default:
					add(false, "drifted: completed by %s under policy %s, and completing it now would change %s (mgrctl diff %s)", stamp.Version, stamp.Policy, strings.Join(docs[0].Changed, ", "), ref)
				}
			}
		}
		out = append(out, s.bootstrapStatus(ctx, cs, d))
	}

	if hook != nil {
		ok, text := s.caBundleVerifies(ctx, cs, hook)
		add(ok, "%s", text)
		out = append(out, apiServerCalls(ctx, cs, d, hook))
	}

	res := CheckResult{APIVersion: ResultsAPIVersion, Kind: "CheckResult", Namespace: d.Namespace, Name: d.Name, OK: true, Findings: []Finding{}}
	for _, f := range out {
		res.Findings = append(res.Findings, Finding{OK: f.ok, Message: f.text})
		res.OK = res.OK && f.ok
	}
	if !res.OK {
		s.status = ExitRefused
	}
	if s.output != "" {
		return write(s.stdout, s.output, res)
	}
	fmt.Fprintf(s.stdout, "deploy/%s in %s\n", d.Name, d.Namespace)
	for _, f := range res.Findings {
		mark := "ok  "
		if !f.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(s.stdout, "  %s %s\n", mark, f.Message)
	}
	return nil
}

// bootstrapStatus says what the controller's status annotation on d says,
// only when the controller's seal on it verifies: anyone who may edit the
// Deployment may write the annotation. The seal's key is in Secret
// mgrstatus.KeySecretName of the install's namespace; a user who may
// not read it is told the phase is unverified, not shown it as fact. An
// unsealed phase is quoted: anyone who may edit the Deployment wrote it.
func (s *session) bootstrapStatus(ctx context.Context, cs kubernetes.Interface, d *appsv1.Deployment) finding {
	st, err := mgrstatus.Of(d)
	switch {
	case err != nil:
		return finding{false, fmt.Sprintf("bootstrap status: %v", err)}
	case st.Phase == "":
		return finding{false, fmt.Sprintf("no bootstrap status yet: is mgr-bootstrap running (kubectl -n %s get pods -l app.kubernetes.io/name=mgr-bootstrap)?", s.installNamespace)}
	}
	sec, err := cs.CoreV1().Secrets(s.installNamespace).Get(ctx, mgrstatus.KeySecretName, metav1.GetOptions{})
	sealed := false
	if err == nil {
		sealed, err = mgrstatus.SealedBy(sec, d.UID, st)
	}
	switch {
	case err != nil:
		return finding{false, fmt.Sprintf("bootstrap phase %q is unverified: the annotation says so, and only the controller's seal, checked with Secret %s/%s, tells its status from one an editor wrote (%v); run check as someone who may get that Secret",
			st.Phase, s.installNamespace, mgrstatus.KeySecretName, err)}
	case !sealed:
		return finding{false, fmt.Sprintf("bootstrap status not sealed by the controller: someone else wrote annotation %s (it says phase %q); the controller ignores it and writes its own on its next pass (kubectl describe deploy -n %s %s shows a %s Event)",
			contract.AnnotationBootstrapStatus, st.Phase, d.Namespace, d.Name, bootstrap.ReasonStatusForged)}
	case st.ObservedGeneration < d.Generation:
		return finding{false, fmt.Sprintf("bootstrap status sealed by the controller for generation %d, the Deployment is at %d: the controller has not seen the last change yet (phase %s then)", st.ObservedGeneration, d.Generation, st.Phase)}
	case st.Phase == mgrstatus.PhaseReady:
		return finding{true, fmt.Sprintf("bootstrap phase Ready, sealed by the controller (modules %s)", strings.Join(st.Modules, ", "))}
	default:
		return finding{false, fmt.Sprintf("bootstrap phase %s, sealed by the controller: %s (kubectl describe deploy -n %s %s shows the Events)", st.Phase, st.LastError, d.Namespace, d.Name)}
	}
}

// deploymentName reads deploy/NAME.
func deploymentName(ref string) (string, error) {
	kind, name, ok := strings.Cut(ref, "/")
	if !ok || !slices.Contains([]string{"deploy", "deployment", "deployments", "deployment.apps"}, kind) || name == "" {
		return "", fmt.Errorf("name a Deployment as deploy/NAME, not %q", ref)
	}
	return name, nil
}

// selects says whether the webhook's selectors take d in namespace ns, and
// which of its matchConditions would skip a write of d as it is.
func selects(hook *admissionregistrationv1.MutatingWebhook, d *appsv1.Deployment, ns *corev1.Namespace) []finding {
	var out []finding
	for _, sel := range []struct {
		what string
		ls   *metav1.LabelSelector
		of   map[string]string
	}{{"objectSelector", hook.ObjectSelector, d.Labels}, {"namespaceSelector", hook.NamespaceSelector, ns.Labels}} {
		s, err := metav1.LabelSelectorAsSelector(sel.ls)
		switch {
		case err != nil:
			out = append(out, finding{false, fmt.Sprintf("webhook %s: %s: %v", hook.Name, sel.what, err)})
		case !s.Matches(labels.Set(sel.of)):
			out = append(out, finding{false, fmt.Sprintf("webhook %s does not select it: its %s %q does not match %v", hook.Name, sel.what, s.String(), sel.of)})
		default:
			out = append(out, finding{true, fmt.Sprintf("webhook %s selects it (%s %q)", hook.Name, sel.what, s.String())})
		}
	}
	if d.DeletionTimestamp != nil {
		out = append(out, finding{true, "being deleted: the webhooks skip it (matchConditions), so cleanup is never blocked"})
	}
	var names []string
	for _, c := range hook.MatchConditions {
		names = append(names, c.Name)
	}
	if len(names) > 0 {
		out = append(out, finding{true, fmt.Sprintf("matchConditions %s: a write that changes no spec, label or user annotation (status, finalizers) is not sent", strings.Join(names, ", "))})
	}
	return out
}

// caBundleVerifies checks the webhook's caBundle against the certificate
// its pods serve, read from the Secret they mount (cert-manager's, or the
// self-signed mode's).
func (s *session) caBundleVerifies(ctx context.Context, cs kubernetes.Interface, hook *admissionregistrationv1.MutatingWebhook) (bool, string) {
	secret, host := "", ""
	if svc := hook.ClientConfig.Service; svc != nil {
		host = svc.Name + "." + svc.Namespace + ".svc"
		dep, err := cs.AppsV1().Deployments(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Sprintf("the webhook's Deployment %s/%s: %v", svc.Namespace, svc.Name, err)
		}
		secret = servingSecret(dep)
		sec, err := cs.CoreV1().Secrets(svc.Namespace).Get(ctx, secret, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Sprintf("the serving certificate's Secret %s/%s: %v", svc.Namespace, secret, err)
		}
		return verifyBundle(hook.ClientConfig.CABundle, sec.Data[certs.TLSCertKey], host, time.Now())
	}
	return true, "the webhook is called by URL, not through a Service: its certificate is not read here"
}

// apiServerCalls has the API server call the webhooks as it does for a real
// write: a server-side dry run of creating d again. The API server makes the
// TLS handshake with the installed caBundle, so this is the check that
// counts; admission runs before the dry run finds that d exists, so an
// AlreadyExists (or a refusal) is the webhooks' answer, and "failed calling
// webhook" is the API server's account of why it could not get one.
func apiServerCalls(ctx context.Context, cs kubernetes.Interface, d *appsv1.Deployment, hook *admissionregistrationv1.MutatingWebhook) finding {
	probe := d.DeepCopy()
	probe.ObjectMeta = metav1.ObjectMeta{Name: d.Name, Namespace: d.Namespace, Labels: d.Labels, Annotations: d.Annotations}
	probe.Status = appsv1.DeploymentStatus{}
	_, err := cs.AppsV1().Deployments(d.Namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	ignored := ""
	if hook.FailurePolicy != nil && *hook.FailurePolicy == admissionregistrationv1.Ignore {
		ignored = " (failurePolicy Ignore: a failed call goes unseen here; the API server's log has it)"
	}
	switch {
	case strings.Contains(msg, "failed calling webhook"):
		return finding{false, "the API server cannot call the webhook (a dry-run create of this mgr): " + msg}
	case apierrors.IsForbidden(err) && !strings.Contains(msg, "denied"):
		return finding{false, "could not have the API server call the webhook: a dry-run create of this mgr needs create on deployments in " + d.Namespace + ": " + msg}
	case err == nil, apierrors.IsAlreadyExists(err):
		return finding{true, "the API server calls the webhook: a dry-run create of this mgr passed admission" + ignored}
	default:
		return finding{true, "the API server calls the webhook: a dry-run create of this mgr was answered (" + msg + ")" + ignored}
	}
}

// servingSecret is the Secret the webhook's pods serve from: the one its
// certificate volume mounts (cert-manager), else --cert-secret's (self-signed).
func servingSecret(d *appsv1.Deployment) string {
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "certs" && v.Secret != nil {
			return v.Secret.SecretName
		}
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--cert-secret="); ok {
				return v
			}
		}
	}
	return "mgr-webhook-certs"
}

// verifyBundle says whether caBundle verifies the leaf of certPEM for host
// at now.
func verifyBundle(caBundle, certPEM []byte, host string, now time.Time) (bool, string) {
	pool := x509.NewCertPool()
	if len(caBundle) == 0 || !pool.AppendCertsFromPEM(caBundle) {
		return false, "the webhook configuration has no usable caBundle: the API server cannot verify the webhook (is cert-manager's cainjector, or the self-signed rotator, running?)"
	}
	block, rest := pem.Decode(certPEM)
	if block == nil {
		return false, "the serving Secret holds no certificate"
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return false, fmt.Sprintf("the serving certificate: %v", err)
	}
	inter := x509.NewCertPool()
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if c, err := x509.ParseCertificate(b.Bytes); err == nil {
			inter.AddCert(c)
		}
	}
	_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, DNSName: host, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return false, fmt.Sprintf("the serving certificate expired or is not yet valid (%s to %s): every mgr write fails", leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339))
	case err != nil:
		return false, fmt.Sprintf("the caBundle does not verify the certificate the webhook serves for %s: %v (the API server refuses to call it)", host, err)
	}
	return true, fmt.Sprintf("the caBundle verifies the certificate the webhook serves for %s (valid until %s)", host, leaf.NotAfter.UTC().Format(time.RFC3339))
}
