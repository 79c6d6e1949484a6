// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rook-mgr/mgr-webhook/contract"
)

func sidecarPolicy(image string) *Policy {
	p := DefaultPolicy()
	p.Sidecars = map[string]corev1.Container{"log-collector": {Image: image, Command: []string{"tail", "-F", "/var/log/ceph/mgr.log"}}}
	return p
}

func mustComplete(t *testing.T, d *appsv1.Deployment, p *Policy) Result {
	t.Helper()
	res, errs := Complete(d, testClusters["rook-ceph"], p)
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	return res
}

func containerNames(d *appsv1.Deployment) []string {
	var names []string
	for _, c := range d.Spec.Template.Spec.Containers {
		names = append(names, c.Name)
	}
	return names
}

func TestSidecarReinjection(t *testing.T) {
	d := loadDeployment(t, "testdata/sidecar.yaml")
	first := mustComplete(t, d, sidecarPolicy("quay.io/ceph/ceph:v18.2.4")).Deployment
	if i := containerIndex(first.Spec.Template.Spec.Containers, "log-collector"); i < 0 {
		t.Fatalf("sidecar not injected: %v", containerNames(first))
	}

	// The policy changes: the injected container is replaced, not duplicated.
	second := mustComplete(t, first, sidecarPolicy("quay.io/ceph/ceph:v18.2.5"))
	cs := second.Deployment.Spec.Template.Spec.Containers
	if len(cs) != 2 || cs[containerIndex(cs, "log-collector")].Image != "quay.io/ceph/ceph:v18.2.5" {
		t.Errorf("after a policy change want mgr + new log-collector, got %v", containerNames(second.Deployment))
	}
	if second.Deployment.Annotations[contract.AnnotationSidecarStatus] == first.Annotations[contract.AnnotationSidecarStatus] {
		t.Error("status annotation did not record the new spec")
	}

	// The user stops asking: exactly the injected container goes.
	unasked := second.Deployment.DeepCopy()
	delete(unasked.Annotations, contract.AnnotationInjectSidecars)
	third := mustComplete(t, unasked, sidecarPolicy("quay.io/ceph/ceph:v18.2.5")).Deployment
	if names := containerNames(third); len(names) != 1 || names[0] != contract.MgrContainerName {
		t.Errorf("after removing the request want only mgr, got %v", names)
	}
	if _, ok := third.Annotations[contract.AnnotationSidecarStatus]; ok {
		t.Error("status annotation left behind")
	}
}

func TestSidecarNeverReplacesUserContainer(t *testing.T) {
	d := loadDeployment(t, "testdata/sidecar.yaml")
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "log-collector", Image: "mine:1"})
	res := mustComplete(t, d, sidecarPolicy("quay.io/ceph/ceph:v18.2.4"))
	cs := res.Deployment.Spec.Template.Spec.Containers
	if len(cs) != 2 || cs[1].Image != "mine:1" {
		t.Errorf("the user's own log-collector was touched: %v", cs)
	}
	if _, ok := res.Deployment.Annotations[contract.AnnotationSidecarStatus]; ok {
		t.Error("a container we did not inject was recorded as injected")
	}
	if len(res.Warnings) == 0 {
		t.Error("no warning about the skipped sidecar")
	}
}
