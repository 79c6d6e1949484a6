package bootstrap

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/rook-mgr/mgr-webhook/mutate"
)

// Phase is where a mgr's bootstrap stands.
type Phase string

// Phases, in the order a mgr passes them.
const (
	PhaseWaitingForPod   Phase = "WaitingForPod"   // keyring and Services done; the pod is not Ready
	PhaseWaitingForMgr   Phase = "WaitingForMgr"   // the pod is Ready; Ceph does not list the mgr yet
	PhaseReady           Phase = "Ready"           // modules enabled and configured
	PhaseCephUnavailable Phase = "CephUnavailable" // the cluster did not answer; retrying with backoff
	PhaseError           Phase = "Error"           // a step failed; see lastError
)

// Status is the machine-readable status the controller keeps in the
// mgr.ceph.rook.io/bootstrap-status annotation of the Deployment.
type Status struct {
	Phase Phase `json:"phase"`
	// ObservedGeneration is the Deployment generation the status describes.
	ObservedGeneration int64 `json:"observedGeneration"`
	// Modules are the wanted modules found on or enabled (always-on included).
	Modules []string `json:"modules,omitempty"`
	// Unavailable are wanted modules this Ceph release lacks or cannot run.
	Unavailable []string `json:"unavailableModules,omitempty"`
	// Dashboard is true once the dashboard has a certificate, its port and its admin user.
	Dashboard bool `json:"dashboard,omitempty"`
	// LastError is the last failure, without any key material.
	LastError string `json:"lastError,omitempty"`
}

// StatusOf decodes the status the controller keeps on d: the zero Status
// when there is none, and an error naming the annotation when it is garbled.
// Every reader (the controller, demo, tests, benchmarks) decodes it here.
func StatusOf(d *appsv1.Deployment) (Status, error) {
	var s Status
	v := d.Annotations[mutate.AnnotationBootstrapStatus]
	if v == "" {
		return s, nil
	}
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return Status{}, fmt.Errorf("annotation %s of Deployment %s/%s: %w", mutate.AnnotationBootstrapStatus, d.Namespace, d.Name, err)
	}
	return s, nil
}

// readStatus is StatusOf for the controller: a garbled status is recomputed.
func readStatus(d *appsv1.Deployment) Status {
	s, _ := StatusOf(d)
	return s
}

func (s Status) encode() string {
	b, _ := json.Marshal(s) // plain fields always marshal
	return string(b)
}
