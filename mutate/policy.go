// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// PolicyAPIVersion and PolicyKind identify a policy file.
const (
	PolicyAPIVersion = "mgr.ceph.rook.io/v1alpha1"
	PolicyKind       = "Policy"
)

// Policy holds the site's operator values and rules for mgr Deployments:
// a policy file (for make demo and local runs) or the spec of a MgrPolicy.
// Every field has a default.
type Policy struct {
	metav1.TypeMeta `json:",inline"`
	PolicySpec      `json:",inline"`
}

// Exempts reports whether the policy's owner exempted Deployment
// namespace/name.
func (p *Policy) Exempts(namespace, name string) bool {
	for _, e := range p.Exemptions {
		if e.Namespace == namespace && (len(e.Names) == 0 || slices.Contains(e.Names, name)) {
			return true
		}
	}
	return false
}

// DefaultPolicy returns the policy used when no file is given: the official
// Ceph images of the releases Ceph still maintains (contract.OldestMaintained
// on), Tentacle 20.2.4 for a mgr that names no image (one Rook supports, and
// the one the controller's CLI comes from), and the seed's values. A site
// that still runs an end-of-life release admits it by lowering
// minimumCephVersion; Pacific (16.2) is the oldest the controller completes
// fully, the oldest whose dashboard takes its admin's password on stdin.
func DefaultPolicy() *Policy {
	p := &Policy{}
	p.setDefaults()
	return p
}

func (p *Policy) setDefaults() {
	p.APIVersion, p.Kind = PolicyAPIVersion, PolicyKind
	if p.DefaultImage == "" {
		p.DefaultImage = "quay.io/ceph/ceph:v20.2.4"
	}
	if p.Images.AllowedRepositories == nil {
		p.Images.AllowedRepositories = []string{"quay.io/ceph/ceph", "docker.io/ceph/ceph"}
	}
	if p.Images.MinimumCephVersion == "" {
		p.Images.MinimumCephVersion = contract.OldestMaintained.String()
	}
	if p.DataDirHostPath == "" {
		p.DataDirHostPath = "/var/lib/rook"
	}
	if p.ServiceAccountName == "" {
		p.ServiceAccountName = "rook-ceph-mgr"
	}
	if p.Rook.OperatorNamespace == "" {
		p.Rook.OperatorNamespace = "rook-ceph"
	}
	if p.Rook.OperatorServiceAccount == "" {
		p.Rook.OperatorServiceAccount = "rook-ceph-system"
	}
	if p.Rook.ClusterCRDVersion == "" {
		p.Rook.ClusterCRDVersion = "v1"
	}
	if p.ServerAddrInitContainers.Enabled == nil {
		p.ServerAddrInitContainers.Enabled = ptrTo(true)
	}
	if p.ServerAddrInitContainers.ConnectTimeoutSeconds == 0 {
		p.ServerAddrInitContainers.ConnectTimeoutSeconds = 15
	}
	if p.StartupProbe.Enabled == nil {
		p.StartupProbe.Enabled = ptrTo(true)
	}
	if p.HandOver.Enabled == nil {
		p.HandOver.Enabled = ptrTo(true)
	}
	if p.Placement.PriorityClassName == "" {
		p.Placement.PriorityClassName = "system-cluster-critical"
	}
	if p.Placement.NodeLossTolerationSeconds == nil {
		p.Placement.NodeLossTolerationSeconds = ptrTo[int64](5)
	}
	if p.LivenessProbe.Enabled == nil {
		p.LivenessProbe.Enabled = ptrTo(true)
	}
	if p.Modules == nil {
		p.Modules = slices.Clone(contract.DefaultModules)
	}
}

// ParsePolicy decodes a policy file strictly: unknown fields, a wrong
// apiVersion/kind and invalid values are errors, so a typo fails at start-up
// instead of silently weakening the policy.
func ParsePolicy(data []byte) (*Policy, error) {
	p := &Policy{}
	if err := yaml.UnmarshalStrict(data, p); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if p.APIVersion != PolicyAPIVersion || p.Kind != PolicyKind {
		return nil, fmt.Errorf("policy: apiVersion/kind must be %s/%s, got %q/%q", PolicyAPIVersion, PolicyKind, p.APIVersion, p.Kind)
	}
	p.setDefaults()
	if errs := p.validate(nil); len(errs) > 0 {
		return nil, fmt.Errorf("policy: %w", errs.ToAggregate())
	}
	return p, nil
}

// PolicyFromSpec is the policy a MgrPolicy's spec (at path root) gives,
// defaulted and validated as a policy file is; the errors name root's fields.
func PolicyFromSpec(spec *PolicySpec, root *field.Path) (*Policy, field.ErrorList) {
	p := &Policy{PolicySpec: *spec.DeepCopy()}
	p.setDefaults()
	if errs := p.validate(root); len(errs) > 0 {
		return nil, errs
	}
	return p, nil
}

// Hash names what p says (its defaulted spec, not how it was written): equal
// policies hash alike whatever their source, so a completed mgr's stamp and a
// replica's status can be compared with the policy in force.
func (p *Policy) Hash() string {
	data, err := json.Marshal(p.PolicySpec) // maps marshal in key order
	if err != nil {
		panic(fmt.Sprintf("policy: cannot marshal a PolicySpec: %v", err))
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

func (p *Policy) validate(root *field.Path) field.ErrorList {
	var errs field.ErrorList
	if _, err := contract.ParseCephTag(p.Images.MinimumCephVersion); err != nil {
		errs = append(errs, field.Invalid(root.Child("images", "minimumCephVersion"), p.Images.MinimumCephVersion, err.Error()))
	}
	if _, err := parseImage(p.DefaultImage); err != nil {
		errs = append(errs, field.Invalid(root.Child("defaultImage"), p.DefaultImage, err.Error()))
	}
	if len(p.DataDirHostPath) == 0 || p.DataDirHostPath[0] != '/' {
		errs = append(errs, field.Invalid(root.Child("dataDirHostPath"), p.DataDirHostPath, "must be an absolute path"))
	}
	if msgs := validation.IsDNS1123Subdomain(p.Placement.PriorityClassName); len(msgs) > 0 {
		errs = append(errs, field.Invalid(root.Child("placement", "priorityClassName"), p.Placement.PriorityClassName, "must name a PriorityClass: "+strings.Join(msgs, "; ")))
	}
	if s := p.Placement.NodeLossTolerationSeconds; *s < 0 {
		errs = append(errs, field.Invalid(root.Child("placement", "nodeLossTolerationSeconds"), *s, "must not be negative"))
	}
	if p.ServerAddrInitContainers.ConnectTimeoutSeconds < 0 {
		errs = append(errs, field.Invalid(root.Child("serverAddrInitContainers", "connectTimeoutSeconds"), p.ServerAddrInitContainers.ConnectTimeoutSeconds, "must be positive"))
	}
	if msgs := validation.IsDNS1123Label(p.Rook.OperatorNamespace); len(msgs) > 0 {
		errs = append(errs, field.Invalid(root.Child("rook", "operatorNamespace"), p.Rook.OperatorNamespace, "must name a namespace: "+strings.Join(msgs, "; ")))
	}
	if msgs := validation.IsDNS1123Subdomain(p.Rook.OperatorServiceAccount); len(msgs) > 0 {
		errs = append(errs, field.Invalid(root.Child("rook", "operatorServiceAccount"), p.Rook.OperatorServiceAccount, "must name a ServiceAccount: "+strings.Join(msgs, "; ")))
	}
	for i, e := range p.Exemptions {
		fp := root.Child("exemptions").Index(i)
		if msgs := validation.IsDNS1123Label(e.Namespace); len(msgs) > 0 {
			errs = append(errs, field.Invalid(fp.Child("namespace"), e.Namespace, "must name a namespace: "+strings.Join(msgs, "; ")))
		}
		for j, n := range e.Names {
			if msgs := validation.IsDNS1123Subdomain(n); len(msgs) > 0 {
				errs = append(errs, field.Invalid(fp.Child("names").Index(j), n, "must name a Deployment: "+strings.Join(msgs, "; ")))
			}
		}
	}
	errs = append(errs, p.validateEnforcement(root)...)
	for i, m := range p.Modules {
		if !moduleName.MatchString(m) {
			errs = append(errs, field.Invalid(root.Child("modules").Index(i), m, "must be a mgr module's name (lower-case letters, digits, _), one per item"))
		}
	}
	for i, m := range p.ModuleChoices {
		if !moduleName.MatchString(m) {
			errs = append(errs, field.Invalid(root.Child("moduleChoices").Index(i), m, "must be a mgr module's name (lower-case letters, digits, _), one per item"))
		}
	}
	errs = append(errs, p.validateModuleOptions(root.Child("moduleOptions"))...)
	errs = append(errs, p.validateCephxKeys(root.Child("cephxKeys"))...)
	for name, c := range p.Sidecars {
		fp := root.Child("sidecars").Key(name)
		if c.Name != "" && c.Name != name {
			errs = append(errs, field.Invalid(fp.Child("name"), c.Name, "must be empty or equal the sidecar's key"))
		}
		if c.Image == "" {
			errs = append(errs, field.Required(fp.Child("image"), "a sidecar needs an image"))
		}
		if name == contract.MgrContainerName {
			errs = append(errs, field.Invalid(fp, name, "the name of the mgr container cannot be a sidecar"))
		}
	}
	return errs
}

// moduleName is what `ceph mgr module ls` names a module.
var moduleName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// maxModuleOptionValue bounds an option's value (the CRD's bound too).
const maxModuleOptionValue = 256

// validateCephxKeys refuses a rotation the controller would not do as
// asked (the CRD's schema says the same for a MgrPolicy; a policy file
// meets only this).
func (p *Policy) validateCephxKeys(fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	k := p.CephxKeys
	if k.Generation < 0 || k.Generation > 1000000 {
		errs = append(errs, field.Invalid(fp.Child("generation"), k.Generation, "must be 1 to 1000000 (a key starts at generation 1; raise it to rotate every mgr's keys)"))
	}
	if k.RotateAfter != nil && k.RotateAfter.Duration < time.Hour {
		errs = append(errs, field.Invalid(fp.Child("rotateAfter"), k.RotateAfter.Duration.String(), "must be at least 1h: each rotation restarts every mgr of a cluster"))
	}
	if !slices.Contains([]string{"", "aes", "aes256k"}, k.KeyType) {
		errs = append(errs, field.NotSupported(fp.Child("keyType"), k.KeyType, []string{"aes", "aes256k"}))
	}
	for i, ns := range k.Namespaces {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, field.Invalid(fp.Child("namespaces").Index(i), ns, "must name a namespace: "+strings.Join(msgs, "; ")))
		}
	}
	return errs
}

// validateModuleOptions refuses what the controller could not set as asked:
// names Ceph does not use, values not on one line, and the options each mgr
// gets of its own.
func (p *Policy) validateModuleOptions(fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, module := range slices.Sorted(maps.Keys(p.ModuleOptions)) {
		mp := fp.Key(module)
		if !moduleName.MatchString(module) || len(module) > 64 {
			errs = append(errs, field.Invalid(mp, module, "must be a mgr module's name (lower-case letters, digits, _)"))
		}
		for _, option := range slices.Sorted(maps.Keys(p.ModuleOptions[module])) {
			op, value := mp.Key(option), p.ModuleOptions[module][option]
			switch {
			case !moduleName.MatchString(option) || len(option) > 64:
				errs = append(errs, field.Invalid(op, option, "must be a module option's name (lower-case letters, digits, _), e.g. scrape_interval"))
			case contract.SensitiveModuleOption.MatchString(option):
				errs = append(errs, field.Forbidden(op, "an option that may hold a credential does not belong in the policy (readable by whoever may read it, and the value would reach Ceph's audit log); set it in Ceph by hand"))
			case slices.Contains(contract.PerMgrModuleOptions[module], option):
				errs = append(errs, field.Forbidden(op, fmt.Sprintf("%s's %s is set per mgr by the controller (from the mgr's container and Pod); remove it from moduleOptions", module, option)))
			case value == "" || len(value) > maxModuleOptionValue || strings.ContainsAny(value, "\n\r\x00"):
				errs = append(errs, field.Invalid(op, value, fmt.Sprintf("must be 1 to %d characters on one line", maxModuleOptionValue)))
			}
		}
	}
	return errs
}

func ptrTo[T any](v T) *T { return &v }

// WritePolicy writes p as a policy file.
func WritePolicy(w io.Writer, p *Policy) error {
	data, err := yaml.Marshal(p)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// RookOperator is the user name Rook's operator writes as.
func (p *Policy) RookOperator() string {
	return "system:serviceaccount:" + p.Rook.OperatorNamespace + ":" + p.Rook.OperatorServiceAccount
}

// Governs reports whether the policy binds Deployment namespace/name: a mgr that the
// policy's owner did not exempt and that no live Rook CephCluster owns
// (rookOwned, which the caller verified by the owner's UID).
func (p *Policy) Governs(namespace, name string, isMgr, rookOwned bool) bool {
	return isMgr && !rookOwned && !p.Exempts(namespace, name)
}
