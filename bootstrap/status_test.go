package bootstrap

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rook-mgr/mgr-webhook/mutate"
)

func TestStatusOf(t *testing.T) {
	with := func(v string) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "rook-ceph", Name: "rook-ceph-mgr-a"}}
		if v != "" {
			d.Annotations = map[string]string{mutate.AnnotationBootstrapStatus: v}
		}
		return d
	}
	ready := Status{Phase: PhaseReady, ObservedGeneration: 5, Modules: []string{"prometheus"}, Dashboard: true}
	got, err := StatusOf(with(ready.encode()))
	if err != nil || got.Phase != PhaseReady || got.ObservedGeneration != 5 || !got.Dashboard || len(got.Modules) != 1 {
		t.Errorf("round trip: %+v, %v", got, err)
	}
	if got, err := StatusOf(with("")); err != nil || got.Phase != "" {
		t.Errorf("no annotation: %+v, %v", got, err)
	}
	_, err = StatusOf(with("{not json"))
	if err == nil || !strings.Contains(err.Error(), mutate.AnnotationBootstrapStatus) || !strings.Contains(err.Error(), "rook-ceph/rook-ceph-mgr-a") {
		t.Errorf("garbled: %v; want an error naming the annotation and the Deployment", err)
	}
	if s := readStatus(with("{not json")); s.Phase != "" {
		t.Errorf("the controller's reader keeps a garbled status: %+v", s)
	}
}
