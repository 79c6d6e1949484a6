// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// Stamp says what completed a mgr Deployment, so that whether completing it
// again would change it (drift) is decidable: the policy's hash names the
// policy, the version the completion code.
type Stamp struct {
	Version string `json:"version"`
	Policy  string `json:"policy"`
}

// String is the stamp as annotation mgr.ceph.rook.io/completed-by holds it.
func (s Stamp) String() string {
	data, _ := json.Marshal(s) // two strings always marshal
	return string(data)
}

// StampOf reads d's stamp; false when it carries none or one it cannot read.
func StampOf(d *appsv1.Deployment) (Stamp, bool) {
	var s Stamp
	v, ok := d.Annotations[contract.AnnotationCompletedBy]
	if !ok || json.Unmarshal([]byte(v), &s) != nil || s.Policy == "" {
		return Stamp{}, false
	}
	return s, true
}

// StampInPlace writes s on d (completed just now); it reports whether the
// annotation changed.
func StampInPlace(d *appsv1.Deployment, s Stamp) bool {
	v := s.String()
	if d.Annotations[contract.AnnotationCompletedBy] == v {
		return false
	}
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[contract.AnnotationCompletedBy] = v
	return true
}
