// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package keyrotation decides when the controller rotates the cephx keys it
// owns: on the policy's generation (on demand), on its age (a schedule), or
// when Ceph reports the key of an insecure type. A rotation restarts the
// mgr's pod on its new key, so the keys of a cluster's mgrs are rotated
// standbys first, each once no mgr of the cluster is rolling out, and the
// active mgr's last: its restart is then the rollout's one failover
// (bootstrap/rollout).
package keyrotation

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rook-mgr/mgr-webhook/api/v1alpha1"
)

// Policy is what the policy asks of the keys (v1alpha1.CephxKeys).
type Policy struct {
	// Generation: a key of a lower generation is due.
	Generation int64
	// RotateAfter: a key this old is due (0: never by age).
	RotateAfter time.Duration
	// KeyType is the type a rotation asks Ceph for ("": the mons'
	// preferred); "aes" never migrates an insecure key.
	KeyType string
}

// PolicyOf reads the policy's cephxKeys for the keys of namespace ns: a
// namespace the policy does not name (when it names any) has no generation
// and no age to rotate by, only its type.
func PolicyOf(k v1alpha1.CephxKeys, ns string) Policy {
	p := Policy{KeyType: k.KeyType}
	if len(k.Namespaces) > 0 && !slices.Contains(k.Namespaces, ns) {
		return p
	}
	p.Generation = k.Generation
	if k.RotateAfter != nil {
		p.RotateAfter = k.RotateAfter.Duration
	}
	return p
}

// Key is what the controller knows of one mgr's keys.
type Key struct {
	// ID is the mgr's id.
	ID string
	// Owned: the controller made (or adopted) the key; only such a key is
	// rotated.
	Owned bool
	// Generation is the keys' generation (0 or 1: never rotated).
	Generation int64
	// Since is when the keys were made or last rotated (zero: unknown).
	Since time.Time
	// Insecure: Ceph reports mgr.<id>'s key of an insecure type.
	Insecure bool
}

// Gen is k's generation: a key never rotated is generation 1.
func (k Key) Gen() int64 { return max(k.Generation, 1) }

// Due says why p makes k's rotation due at now, "" when it does not.
func Due(p Policy, k Key, now time.Time) string {
	switch {
	case !k.Owned:
		return ""
	case p.Generation > k.Gen():
		return fmt.Sprintf("the policy asks for key generation %d (the key is generation %d)", p.Generation, k.Gen())
	case p.RotateAfter > 0 && !k.Since.IsZero() && now.Sub(k.Since) >= p.RotateAfter:
		return fmt.Sprintf("the key is older than the policy's rotateAfter (%s)", p.RotateAfter)
	case k.Insecure && p.KeyType != "aes":
		return "Ceph reports the key of an insecure type (" + insecureCheck + ")"
	}
	return ""
}

const insecureCheck = "AUTH_INSECURE_SERVICE_KEY_TYPE"

// Cluster is what a rotation waits for in the mgr's cluster.
type Cluster struct {
	// Unread: the controller has not read the cluster's releases yet.
	Unread bool
	// Cannot says why the cluster cannot rotate keys ("" when it can).
	Cannot string
	// Rolling is a mgr of the cluster whose pods roll out or are held ("":
	// none).
	Rolling string
	// Active is the cluster's active mgr ("" when none is, or when no other
	// mgr's keys are due: it is then not asked).
	Active string
	// Others are the keys of the cluster's other running mgrs.
	Others []Key
}

// Step is what to do with one mgr's keys.
type Step struct {
	// Due is why the keys are due ("" when they are not: nothing to do).
	Due string
	// Blocked is why they cannot be rotated on this cluster; Wait what
	// they wait for.
	Blocked, Wait string
	// Generation is the generation a rotation makes (0: no rotation now).
	Generation int64
}

// Plan decides the step of mgr k's keys at now.
func Plan(p Policy, k Key, c Cluster, now time.Time) Step {
	st := Step{Due: Due(p, k, now)}
	switch {
	case st.Due == "":
	case c.Unread:
		st.Wait = "the controller has not read the cluster's releases yet"
	case c.Cannot != "":
		st.Blocked = c.Cannot
	case c.Rolling != "":
		st.Wait = "mgr " + c.Rolling + " is rolling out"
	case c.Active == k.ID && dueOthers(p, c.Others, now) != "":
		st.Wait = "the standbys' keys first: mgr " + dueOthers(p, c.Others, now)
	default:
		st.Generation = max(k.Gen()+1, p.Generation)
	}
	return st
}

// dueOthers names the other mgrs whose keys are due, "" for none.
func dueOthers(p Policy, others []Key, now time.Time) string {
	var ids []string
	for _, o := range others {
		if Due(p, o, now) != "" {
			ids = append(ids, o.ID)
		}
	}
	return strings.Join(ids, ", ")
}

// ReportedInsecure reports whether a read of the cluster that listed the
// key insecure (listed, at read) says so of the key made at since: only a
// read after it does. A key just rotated stays listed until the next read,
// and must not be rotated again for it.
func ReportedInsecure(listed bool, read, since time.Time) bool {
	return listed && read.After(since)
}

// GenerationOf reads the generation annotation of a pod template (0 when it
// has none or it is not a number).
func GenerationOf(v string) int64 {
	g, err := strconv.ParseInt(v, 10, 64)
	if err != nil || g < 0 {
		return 0
	}
	return g
}
