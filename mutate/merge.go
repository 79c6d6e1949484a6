// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The merge functions add what is missing and keep what is there: an entry
// the user wrote (matched by name, or by flag for args) wins over ours. Each
// reports whether it changed anything, which is how Complete knows what to
// patch without diffing.

// setMissing adds the keys of want that m lacks.
func setMissing(m *map[string]string, want map[string]string) bool {
	changed := false
	for k, v := range want {
		if _, ok := (*m)[k]; ok {
			continue
		}
		if *m == nil {
			*m = make(map[string]string, len(want))
		}
		(*m)[k] = v
		changed = true
	}
	return changed
}

// flagKey is "--name" for "--name=value" and "--name"; "" for positional args.
func flagKey(arg string) string {
	if !strings.HasPrefix(arg, "-") {
		return ""
	}
	if i := strings.IndexByte(arg, '='); i >= 0 {
		return arg[:i]
	}
	return arg
}

// mergeArgs orders our flags first (the user's value where the user set the
// flag) and then the rest of the user's args in their order. Positional args
// of ours are only used when the user gave no args at all.
func mergeArgs(have *[]string, want []string) bool {
	if len(*have) == 0 {
		*have = append([]string(nil), want...)
		return len(want) > 0
	}
	used := make([]bool, len(*have))
	out := make([]string, 0, len(*have)+len(want))
	for _, w := range want {
		key := flagKey(w)
		if key == "" {
			continue
		}
		found := false
		for i, h := range *have {
			if !used[i] && flagKey(h) == key {
				out, used[i], found = append(out, h), true, true
				break
			}
		}
		if !found {
			out = append(out, w)
		}
	}
	for i, h := range *have {
		if !used[i] {
			out = append(out, h)
		}
	}
	if slices.Equal(out, *have) {
		return false
	}
	*have = out
	return true
}

// mergeEnv orders our variables first (the user's definition where the user
// set that name) and then the user's others, so that user variables may refer
// to ours with $(NAME).
func mergeEnv(have *[]corev1.EnvVar, want []corev1.EnvVar) bool {
	out := make([]corev1.EnvVar, 0, len(*have)+len(want))
	used := make([]bool, len(*have))
	for _, w := range want {
		found := false
		for i := range *have {
			if !used[i] && (*have)[i].Name == w.Name {
				out, used[i], found = append(out, (*have)[i]), true, true
				break
			}
		}
		if !found {
			out = append(out, w)
		}
	}
	for i := range *have {
		if !used[i] {
			out = append(out, (*have)[i])
		}
	}
	for i := range out {
		if i >= len(*have) || out[i].Name != (*have)[i].Name {
			*have = out
			return true
		}
	}
	return false
}

// syncEnvValue keeps a derived literal variable (CONTAINER_IMAGE) equal to its
// source; a variable the user points elsewhere (valueFrom) is left alone. It
// returns the value it replaced, and whether it replaced one.
func syncEnvValue(env []corev1.EnvVar, name, value string) (string, bool) {
	for i := range env {
		if env[i].Name == name && env[i].ValueFrom == nil && env[i].Value != value {
			old := env[i].Value
			env[i].Value = value
			return old, true
		}
	}
	return "", false
}

// mergeMissing appends each wanted entry that no existing entry matches.
func mergeMissing[T any](have *[]T, want []T, matches func(have, want T) bool) bool {
	changed := false
	for _, w := range want {
		if !slices.ContainsFunc(*have, func(h T) bool { return matches(h, w) }) {
			*have = append(*have, w)
			changed = true
		}
	}
	return changed
}

// mergePorts adds our ports unless the user has one of that name or the same
// port number and protocol.
func mergePorts(have *[]corev1.ContainerPort, want []corev1.ContainerPort) bool {
	return mergeMissing(have, want, func(h, w corev1.ContainerPort) bool {
		proto := h.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		return h.Name == w.Name || (h.ContainerPort == w.ContainerPort && proto == w.Protocol)
	})
}

// mergeMounts adds our mounts unless the user mounts that volume already or
// uses that mount path for something else.
func mergeMounts(have *[]corev1.VolumeMount, want []corev1.VolumeMount) bool {
	return mergeMissing(have, want, func(h, w corev1.VolumeMount) bool {
		return h.Name == w.Name || strings.TrimSuffix(h.MountPath, "/") == strings.TrimSuffix(w.MountPath, "/")
	})
}

// mergeVolumes adds our volumes unless the user has one of that name.
func mergeVolumes(have *[]corev1.Volume, want []corev1.Volume) bool {
	return mergeMissing(have, want, func(h, w corev1.Volume) bool { return h.Name == w.Name })
}
