// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rook-mgr/mgr-webhook/contract"
)

// ClusterInfo holds what Complete needs to know about the Ceph cluster of the
// Deployment's namespace. As in Rook, a cluster is named by its namespace.
type ClusterInfo struct {
	Namespace string
	FSID      string
	// Upgrade is what the controller last read of the cluster (its
	// CephRelease); nil until it has.
	Upgrade *UpgradeFacts
}

// Section is a part of a Deployment that Complete may change. The webhook
// patches exactly the sections that changed instead of diffing whole objects.
type Section uint16

// Sections of a Deployment, each one JSON Patch path.
const (
	SectionLabels Section = 1 << iota
	SectionAnnotations
	SectionReplicas
	SectionSelector
	SectionStrategy
	SectionTemplateMetadata
	SectionContainers
	SectionInitContainers
	SectionVolumes
	SectionServiceAccount
	SectionAffinity
	SectionTolerations
	SectionPriorityClass
	// SectionPaused is spec.paused: only the rollout hold (HoldRollout)
	// changes it.
	SectionPaused
)

// Result is what Complete made of a Deployment.
type Result struct {
	// Deployment is the completed copy; the input is never modified.
	Deployment *appsv1.Deployment
	// Changed says which sections differ from the input; zero when the input
	// was already complete.
	Changed Section
	// Warnings tell the user about defaults they may not expect.
	Warnings []string
}

// Complete turns a (minimal) mgr Deployment into the full spec of a Rook mgr.
// Values already present are kept: lists merge by name (containers, env,
// ports, volumes, mounts) and args by flag, so Complete(Complete(x)) equals
// Complete(x). It returns errors only when the Deployment cannot be completed
// at all (no usable mgr id or mgr container); everything else is left to
// Validate.
func Complete(in *appsv1.Deployment, info ClusterInfo, p *Policy) (Result, field.ErrorList) {
	res, errs := CompleteInPlace(in.DeepCopy(), info, p)
	if len(errs) > 0 {
		res.Deployment = in
	}
	return res, errs
}

// CompleteInPlace is Complete without the copy: it completes d itself (and
// may have changed it when it returns errors). For callers that own d, like
// the webhook with the object it just decoded.
func CompleteInPlace(d *appsv1.Deployment, info ClusterInfo, p *Policy) (Result, field.ErrorList) {
	if errs := validateIdentity(d); len(errs) > 0 {
		return Result{Deployment: d}, errs
	}
	// Presence is enough (no decode on the admission path): the stamp only
	// quiets warnings, it decides no rule.
	_, stamped := d.Annotations[contract.AnnotationCompletedBy]
	c := completer{d: d, id: contract.MgrID(d), info: info, p: p, completedBefore: stamped}
	if errs := c.complete(); len(errs) > 0 {
		return Result{Deployment: d}, errs
	}
	return Result{Deployment: c.d, Changed: c.changed, Warnings: c.warnings}, nil
}

type completer struct {
	d        *appsv1.Deployment
	id       string
	info     ClusterInfo
	p        *Policy
	changed  Section
	warnings []string
	// completedBefore: d carries a completion stamp, so the values derived
	// from its image are ours, and follow a new image without a warning.
	completedBefore bool
}

func (c *completer) mark(s Section, changed bool) {
	if changed {
		c.changed |= s
	}
}

func (c *completer) warn(format string, args ...any) {
	c.warnings = append(c.warnings, fmt.Sprintf(format, args...))
}

func (c *completer) complete() field.ErrorList {
	d := c.d
	labels := c.labels()
	c.mark(SectionLabels, setMissing(&d.Labels, labels))

	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptrTo[int32](1)
		c.mark(SectionReplicas, true)
	}
	if d.Spec.Selector == nil || (len(d.Spec.Selector.MatchLabels) == 0 && len(d.Spec.Selector.MatchExpressions) == 0) {
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{
			contract.LabelApp: contract.AppName, contract.LabelMgrID: c.id, contract.LabelRookCluster: c.info.Namespace,
		}}
		c.mark(SectionSelector, true)
	}
	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || d.Spec.Strategy.RollingUpdate != nil {
		if chosenStrategy(d.Spec.Strategy) {
			c.warn("spec.strategy: %s replaced by Recreate: two pods of mgr %q must never run at once", describeStrategy(d.Spec.Strategy), c.id)
		}
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		c.mark(SectionStrategy, true)
	}
	c.mark(SectionTemplateMetadata, setMissing(&d.Spec.Template.Labels, labels))

	spec := &d.Spec.Template.Spec
	if spec.ServiceAccountName == "" && c.p.ServiceAccountName != "" {
		spec.ServiceAccountName = c.p.ServiceAccountName
		c.mark(SectionServiceAccount, true)
	}

	mgr, errs := c.mgrContainer()
	if len(errs) > 0 {
		return errs
	}
	c.completeMgr(mgr)
	if *c.p.ServerAddrInitContainers.Enabled {
		for _, module := range contract.ServerAddrModules {
			c.completeServerAddrInit(module, mgr.Image)
		}
	}
	c.mark(SectionVolumes, mergeVolumes(&spec.Volumes, c.volumes()))
	c.mark(SectionVolumes, dropUnmountedAdminKeyring(spec))
	c.place(spec)
	c.injectSidecars()
	return nil
}

// place puts a mgr where Rook does: away from the other mgrs of its
// cluster (one node's loss takes one of them at most), off a lost node in
// seconds, above ordinary pods in priority. What the Deployment sets
// itself is kept: its own pod anti-affinity, a toleration of the same key,
// a priority class.
func (c *completer) place(spec *corev1.PodSpec) {
	pl := c.p.Placement
	if spec.Affinity == nil || spec.Affinity.PodAntiAffinity == nil {
		term := corev1.PodAffinityTerm{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
				contract.LabelApp: contract.AppName, contract.LabelRookCluster: c.info.Namespace,
			}},
			TopologyKey: corev1.LabelHostname,
		}
		anti := &corev1.PodAntiAffinity{}
		if pl.AllowMultiplePerNode {
			anti.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: 50, PodAffinityTerm: term}}
		} else {
			anti.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{term}
		}
		if spec.Affinity == nil {
			spec.Affinity = &corev1.Affinity{}
		}
		spec.Affinity.PodAntiAffinity = anti
		c.mark(SectionAffinity, true)
	}
	for _, key := range []string{corev1.TaintNodeUnreachable, corev1.TaintNodeNotReady} {
		if slices.ContainsFunc(spec.Tolerations, func(t corev1.Toleration) bool { return t.Key == key }) {
			continue
		}
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(*pl.NodeLossTolerationSeconds)})
		c.mark(SectionTolerations, true)
	}
	if spec.PriorityClassName == "" {
		spec.PriorityClassName = pl.PriorityClassName
		c.mark(SectionPriorityClass, true)
	}
}

// dropNetRaw drops capability NET_RAW from a container of ours (as Rook's
// daemons do: no raw sockets, no ARP or ICMP spoofing from a mgr pod),
// unless the container sets its capabilities itself.
func dropNetRaw(ctr *corev1.Container) bool {
	if ctr.SecurityContext == nil {
		ctr.SecurityContext = &corev1.SecurityContext{}
	}
	if ctr.SecurityContext.Capabilities != nil {
		return false
	}
	ctr.SecurityContext.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"NET_RAW"}}
	return true
}

// labels are the labels of every mgr Deployment and Pod (Rook's).
func (c *completer) labels() map[string]string {
	return map[string]string{
		contract.LabelApp:          contract.AppName,
		contract.LabelMgrID:        c.id,
		contract.LabelCephDaemonID: c.id,
		contract.LabelInstance:     c.id,
		contract.LabelRookCluster:  c.info.Namespace,
	}
}

// mgrContainer finds the container named "mgr", adding one with the policy's
// default image when the Pod has no container at all.
func (c *completer) mgrContainer() (*corev1.Container, field.ErrorList) {
	spec := &c.d.Spec.Template.Spec
	for i := range spec.Containers {
		if spec.Containers[i].Name == contract.MgrContainerName {
			return &spec.Containers[i], nil
		}
	}
	fp := field.NewPath("spec", "template", "spec", "containers")
	if len(spec.Containers) > 0 {
		return nil, field.ErrorList{field.Required(fp, `no container is named "mgr": name the ceph-mgr container "mgr"`)}
	}
	spec.Containers = append(spec.Containers, corev1.Container{Name: contract.MgrContainerName})
	c.mark(SectionContainers, true)
	return &spec.Containers[len(spec.Containers)-1], nil
}

func (c *completer) completeMgr(m *corev1.Container) {
	changed := false
	if m.Image == "" {
		m.Image = c.p.DefaultImage
		changed = true
	}
	if len(m.Command) == 0 {
		m.Command = []string{"ceph-mgr"}
		changed = true
	}
	changed = mergeArgs(&m.Args, append(c.cephArgs(KeyringMountPath+"keyring"), "--id="+c.id, "--foreground")) || changed
	changed = mergeEnv(&m.Env, c.env(m.Image, false, m.Env)) || changed
	changed = c.syncImageEnv(m, m.Image) || changed
	changed = mergePorts(&m.Ports, []corev1.ContainerPort{
		{Name: contract.PortNameMgr, ContainerPort: contract.PortMgr, Protocol: corev1.ProtocolTCP},
		{Name: contract.PortNameMetrics, ContainerPort: contract.PortMetrics, Protocol: corev1.ProtocolTCP},
		{Name: contract.PortNameDash, ContainerPort: contract.PortDashboard, Protocol: corev1.ProtocolTCP},
	}) || changed
	changed = mergeMounts(&m.VolumeMounts, c.mounts(false)) || changed
	if m.LivenessProbe == nil && *c.p.LivenessProbe.Enabled {
		m.LivenessProbe = c.adminSocketProbe(3)
		changed = true
	}
	if m.StartupProbe == nil && *c.p.StartupProbe.Enabled {
		// Rook's: up to a minute (6 x 10 s) to start before liveness counts.
		m.StartupProbe = c.adminSocketProbe(6)
		changed = true
	}
	if m.Lifecycle == nil && *c.p.HandOver.Enabled {
		m.Lifecycle = &corev1.Lifecycle{PreStop: c.handOverHook()}
		changed = true
	}
	changed = dropNetRaw(m) || changed
	c.mark(SectionContainers, changed)
}

// handOverHook fails this mgr over before its container is stopped, when it
// is the active one and a standby is there to take over: the mon promotes the
// standby at once, where without it the mon waits out mon_mgr_beacon_grace
// (30 s) with no active mgr. It names the daemon by gid, found by this pod's
// address in the mgr map, never by name: a new pod of the same mgr may
// already run (the old one stopping on a node that came back) and must not be
// failed. A failed mgr respawns in place, and as PID 1 it drops a SIGTERM that
// arrives before its new process handles signals, which would hold the pod
// for its whole grace period; so the hook returns once the respawned daemon
// is back in the map as a standby (at most 10 s). The mgr's own key may
// (profile mgr: mgr rw). Nothing found or a failure (no mon) stops nothing:
// the kubelet goes on to SIGTERM. CEPH_ARGS is dropped so it cannot point the
// CLI elsewhere.
func (c *completer) handOverHook() *corev1.LifecycleHandler {
	return &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", handOverScript(c.id)}}}
}

func handOverScript(id string) string {
	return "unset CEPH_ARGS; p='" + handOverPicker + "'; " +
		"c() { timeout 10 ceph --name=mgr." + id + " --keyring=" + KeyringMountPath + "keyring" +
		` --mon-host="$ROOK_CEPH_MON_HOST" --connect-timeout=5 "$@"; }; ` +
		`gid=$(c mgr dump --format=json | python3 -c "$p" mine ` + id + `); ` +
		`[ -n "$gid" ] && c mgr fail "$gid" || exit 0; ` +
		`for _ in 1 2 3 4 5 6 7 8 9 10; do c mgr dump --format=json | python3 -c "$p" back ` + id + ` && exit 0; sleep 1; done`
}

// handOverPicker reads a mgr map on stdin. "mine <id>": print the active
// mgr's gid when its address is one of this pod's and a standby is there,
// else nothing. "back <id>": succeed when a standby named <id> is in the map.
// No single quote: the hook quotes it so.
const handOverPicker = `import json, socket, sys
m = json.load(sys.stdin)
standbys = [s.get("name") for s in m.get("standbys", [])]
if sys.argv[1] == "back":
    sys.exit(0 if sys.argv[2] in standbys else 1)
mine = {a[4][0] for a in socket.getaddrinfo(socket.gethostname(), None)}
addr = m.get("active_addr", "").rsplit(":", 1)[0].strip("[]")
print(m["active_gid"] if addr in mine and standbys else "")`

// adminSocketProbe asks the mgr's admin socket for its status every 10 s
// (env -i: the container's CEPH_ARGS would point the ceph CLI elsewhere).
func (c *completer) adminSocketProbe(failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
			Command: []string{"env", "-i", "sh", "-c", "ceph --admin-daemon " + AdminSocketPath(c.id) + " status"},
		}},
		InitialDelaySeconds: 10,
		TimeoutSeconds:      5,
		PeriodSeconds:       10,
		FailureThreshold:    failures,
	}
}

// syncImageEnv keeps container ctr's literal CONTAINER_IMAGE at image, and
// says so when that replaces a value the user wrote (a manifest that pins
// it would differ from the live object from then on).
func (c *completer) syncImageEnv(ctr *corev1.Container, image string) bool {
	old, replaced := syncEnvValue(ctr.Env, "CONTAINER_IMAGE", image)
	if replaced && !c.completedBefore {
		c.warn("env CONTAINER_IMAGE of container %s: %q replaced by %q: it follows the image the container runs", ctr.Name, old, image)
	}
	return replaced
}

// cephArgs are the connection flags the seed passes to every Ceph binary.
func (c *completer) cephArgs(keyring string) []string {
	return []string{
		"--fsid=" + c.info.FSID,
		"--keyring=" + keyring,
		"--log-to-stderr=true",
		"--err-to-stderr=true",
		"--mon-cluster-log-to-stderr=true",
		"--log-stderr-prefix=debug ",
		"--mon-host=$(ROOK_CEPH_MON_HOST)",
		"--mon-initial-members=$(ROOK_CEPH_MON_INITIAL_MEMBERS)",
	}
}

// completeServerAddrInit ensures the init container that points <module> at
// the Pod IP. Its image follows the mgr's: it must speak the same release.
func (c *completer) completeServerAddrInit(module, mgrImage string) {
	name := "init-set-" + module + "-server-addr"
	spec := &c.d.Spec.Template.Spec
	var ic *corev1.Container
	for i := range spec.InitContainers {
		if spec.InitContainers[i].Name == name {
			ic = &spec.InitContainers[i]
		}
	}
	changed := false
	if ic == nil {
		spec.InitContainers = append(spec.InitContainers, corev1.Container{Name: name})
		ic = &spec.InitContainers[len(spec.InitContainers)-1]
		changed = true
	}
	if ic.Image != mgrImage {
		if ic.Image != "" && !c.completedBefore {
			// A GitOps source that pins it would differ from the live object.
			c.warn("spec.template.spec.initContainers[%s].image: %q replaced by %q: it must run the mgr's release", name, ic.Image, mgrImage)
		}
		ic.Image = mgrImage
		changed = true
	}
	if len(ic.Command) == 0 {
		ic.Command = []string{"ceph"}
		changed = true
	}
	changed = dropAdminKeyring(ic) || changed
	// Its own key, which may set its mgr's server_addr options and nothing else.
	args := c.cephArgs(ServerAddrKeyringMountPath + "keyring")
	args = slices.Insert(args, 2, "--name="+contract.ServerAddrEntity(c.id))
	// An unreachable mon must fail the init container, not hang it (rook#3049).
	args = append(args, "--connect-timeout="+strconv.Itoa(int(c.p.ServerAddrInitContainers.ConnectTimeoutSeconds)))
	if len(ic.Args) == 0 {
		// Flags first, then the command: mergeArgs keeps that order stable.
		args = append(args, "config", "set", "mgr."+c.id, "mgr/"+module+"/"+c.id+"/server_addr", "$(ROOK_POD_IP)", "--verbose")
	}
	changed = mergeArgs(&ic.Args, args) || changed
	// From Nautilus on, module options are unknown to the mons until the module
	// has loaded once; --force sets them anyway (rook#3030). Mimic lacks --force.
	changed = placeForce(&ic.Args, imageCephRelease(mgrImage).AtLeast(contract.Nautilus)) || changed
	changed = mergeEnv(&ic.Env, c.env(mgrImage, true, ic.Env)) || changed
	changed = c.syncImageEnv(ic, mgrImage) || changed
	changed = mergeMounts(&ic.VolumeMounts, c.mounts(true)) || changed
	changed = dropNetRaw(ic) || changed
	c.mark(SectionInitContainers, changed)
}

// placeForce puts --force where the ceph CLI reads it, as the argument of
// `config set` right after its value (before the command the CLI takes it
// for the command's first word: "config not in --force"), or takes it out
// (want false). Args whose command is the user's own are left alone.
func placeForce(args *[]string, want bool) bool {
	cmd := -1
	for i := 0; i+4 < len(*args); i++ {
		if (*args)[i] == "config" && (*args)[i+1] == "set" {
			cmd = i
			break
		}
	}
	if cmd < 0 {
		return false
	}
	out := slices.Clone((*args)[:cmd+5])
	out = slices.DeleteFunc(out, func(a string) bool { return a == "--force" })
	if want {
		out = append(out, "--force")
	}
	out = append(out, slices.DeleteFunc(slices.Clone((*args)[cmd+5:]), func(a string) bool { return a == "--force" })...)
	if slices.Equal(out, *args) {
		return false
	}
	*args = out
	return true
}

// dropAdminKeyring moves a server_addr init container completed the seed's
// way off client.admin: its admin keyring mount goes, and its --keyring flag
// (which mergeArgs would keep as the user's) is set anew.
func dropAdminKeyring(ic *corev1.Container) bool {
	n := len(ic.VolumeMounts)
	ic.VolumeMounts = slices.DeleteFunc(ic.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == legacyAdminKeyringVolumeName })
	changed := len(ic.VolumeMounts) != n
	if i := slices.Index(ic.Args, "--keyring="+legacyAdminKeyringMountPath+"keyring"); i >= 0 {
		ic.Args = slices.Delete(ic.Args, i, i+1)
		changed = true
	}
	return changed
}

// dropUnmountedAdminKeyring removes the seed's admin keyring volume once no
// container mounts it. A container of the user's that still does keeps it:
// completion never breaks a Pod spec it did not write.
func dropUnmountedAdminKeyring(spec *corev1.PodSpec) bool {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, ctr := range cs {
			for _, m := range ctr.VolumeMounts {
				if m.Name == legacyAdminKeyringVolumeName {
					return false
				}
			}
		}
	}
	n := len(spec.Volumes)
	spec.Volumes = slices.DeleteFunc(spec.Volumes, func(v corev1.Volume) bool {
		return v.Name == legacyAdminKeyringVolumeName && v.Secret != nil && v.Secret.SecretName == contract.AdminKeyringSecretName
	})
	return len(spec.Volumes) != n
}

// retiredEnv are variables of the seed completion no longer writes:
// ROOK_VERSION put the operator's version into every mgr's Pod, so a new
// version restarted every mgr (rook#4361; Rook dropped it in 2019). A mgr
// completed with one keeps it in its place (the user's definition wins), so
// that upgrading this webhook restarts no mgr either.
var retiredEnv = []string{"ROOK_VERSION"}

// env is the seed's environment of the mgr (and, with podIP, its init
// containers), less what is retired unless have holds it.
func (c *completer) env(image string, podIP bool, have []corev1.EnvVar) []corev1.EnvVar {
	fieldRef := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}}
	}
	res := func(name, res string, divisor resource.Quantity) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: res, Divisor: divisor}}}
	}
	secret := func(name, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: contract.ConfigSecretName}, Key: key}}}
	}
	env := []corev1.EnvVar{
		{Name: "CONTAINER_IMAGE", Value: image},
		fieldRef("POD_NAME", "metadata.name"),
		fieldRef("POD_NAMESPACE", "metadata.namespace"),
		fieldRef("NODE_NAME", "spec.nodeName"),
		res("POD_MEMORY_LIMIT", "limits.memory", resource.Quantity{}),
		res("POD_MEMORY_REQUEST", "requests.memory", resource.Quantity{}),
		res("POD_CPU_LIMIT", "limits.cpu", resource.MustParse("1")),
		res("POD_CPU_REQUEST", "requests.cpu", resource.Quantity{}),
		secret("ROOK_CEPH_MON_HOST", contract.ConfigSecretMonHostKey),
		secret("ROOK_CEPH_MON_INITIAL_MEMBERS", contract.ConfigSecretMembersKey),
	}
	if podIP {
		env = append(env, fieldRef("ROOK_POD_IP", "status.podIP"))
	}
	env = append(env,
		corev1.EnvVar{Name: "ROOK_OPERATOR_NAMESPACE", Value: c.p.Rook.OperatorNamespace},
		corev1.EnvVar{Name: "ROOK_CEPH_CLUSTER_CRD_VERSION", Value: c.p.Rook.ClusterCRDVersion})
	for _, name := range retiredEnv {
		if slices.ContainsFunc(have, func(e corev1.EnvVar) bool { return e.Name == name }) {
			env = append(env, corev1.EnvVar{Name: name}) // a place only: have's definition is kept
		}
	}
	return append(env, corev1.EnvVar{Name: "ROOK_CEPH_CLUSTER_CRD_NAME", Value: c.info.Namespace})
}

func (c *completer) mounts(serverAddr bool) []corev1.VolumeMount {
	m := []corev1.VolumeMount{
		{Name: ConfigVolumeName, MountPath: ConfigMountPath, ReadOnly: true},
		{Name: contract.KeyringSecretName(c.id), MountPath: KeyringMountPath, ReadOnly: true},
		{Name: LogVolumeName, MountPath: LogMountPath},
		{Name: DataVolumeName, MountPath: DataMountPath(c.id)},
	}
	if serverAddr {
		m = append(m, corev1.VolumeMount{Name: ServerAddrKeyringVolumeName, MountPath: ServerAddrKeyringMountPath, ReadOnly: true})
	}
	return m
}

func (c *completer) volumes() []corev1.Volume {
	v := []corev1.Volume{
		{Name: ConfigVolumeName, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: contract.ConfigMapName},
			Items:                []corev1.KeyToPath{{Key: contract.ConfigMapConfKey, Path: contract.ConfigMapConfKey, Mode: ptrTo[int32](0o400)}},
		}}},
		{Name: contract.KeyringSecretName(c.id), VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: contract.KeyringSecretName(c.id)}}},
		{Name: LogVolumeName, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
			Path: LogHostPath(c.p.DataDirHostPath, c.info.Namespace), Type: ptrTo(corev1.HostPathUnset)}}},
		{Name: DataVolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	if *c.p.ServerAddrInitContainers.Enabled {
		v = append(v, corev1.Volume{Name: ServerAddrKeyringVolumeName, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: contract.ServerAddrKeyringSecretName(c.id)}}})
	}
	return v
}

// chosenStrategy tells a strategy the user wrote from the one the API server
// fills in when the manifest says none (RollingUpdate, 25% / 25%): replacing
// the default is expected and goes without a warning.
func chosenStrategy(s appsv1.DeploymentStrategy) bool {
	if s.Type == "" {
		return false
	}
	if s.Type != appsv1.RollingUpdateDeploymentStrategyType || s.RollingUpdate == nil {
		return true
	}
	quarter := intstr.FromString("25%")
	ru := s.RollingUpdate
	return ru.MaxSurge == nil || ru.MaxUnavailable == nil || *ru.MaxSurge != quarter || *ru.MaxUnavailable != quarter
}

func describeStrategy(s appsv1.DeploymentStrategy) string {
	if s.Type != appsv1.RollingUpdateDeploymentStrategyType || s.RollingUpdate == nil {
		return string(s.Type)
	}
	ru := s.RollingUpdate
	return fmt.Sprintf("RollingUpdate (maxSurge %s, maxUnavailable %s)", intOrUnset(ru.MaxSurge), intOrUnset(ru.MaxUnavailable))
}

func intOrUnset(v *intstr.IntOrString) string {
	if v == nil {
		return "unset"
	}
	return v.String()
}
