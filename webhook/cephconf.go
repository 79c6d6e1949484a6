// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package webhook

import (
	"bufio"
	"strings"
)

// fsidFromCephConf returns the fsid of the [global] section of a ceph.conf,
// or "" when it has none. Ceph treats spaces and underscores in option names
// alike, ignores comments (# and ;) and accepts "key = value" or "key=value".
func fsidFromCephConf(conf string) string {
	section := ""
	sc := bufio.NewScanner(strings.NewReader(conf))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasPrefix(line, "[") {
			section = strings.TrimSpace(strings.Trim(line, "[]"))
			continue
		}
		if section != "global" {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(key) != "fsid" {
			continue
		}
		if i := strings.IndexAny(value, "#;"); i >= 0 {
			value = value[:i]
		}
		return strings.TrimSpace(value)
	}
	return ""
}
