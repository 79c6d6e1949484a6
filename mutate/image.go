// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/distribution/reference"
)

// image is a container image reference split into what the policy checks.
type image struct {
	Repository string // normalized, e.g. docker.io/ceph/ceph
	Tag        string // may be empty when only a digest is given
	Digest     string
}

func parseImage(s string) (image, error) {
	named, err := reference.ParseNormalizedNamed(s)
	if err != nil {
		return image{}, err
	}
	img := image{Repository: named.Name()}
	if t, ok := named.(reference.Tagged); ok {
		img.Tag = t.Tag()
	}
	if d, ok := named.(reference.Digested); ok {
		img.Digest = d.Digest().String()
	}
	return img, nil
}

// cephVersion is a Ceph release number: 13.2.3 is Mimic, 16.2.15 Pacific.
type cephVersion struct{ Major, Minor, Patch int }

func (v cephVersion) less(o cephVersion) bool {
	if v.Major != o.Major {
		return v.Major < o.Major
	}
	if v.Minor != o.Minor {
		return v.Minor < o.Minor
	}
	return v.Patch < o.Patch
}

func (v cephVersion) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// parseCephVersion reads the release from an image tag such as "v16.2.15",
// "v13.2.3-20190410" or "v17": an optional v, then up to three dot-separated
// numbers, then an optional -suffix (the build date of Ceph's images).
func parseCephVersion(tag string) (cephVersion, error) {
	s := strings.TrimPrefix(tag, "v")
	if i := strings.IndexByte(s, '-'); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if s == "" || len(parts) > 3 {
		return cephVersion{}, fmt.Errorf("%q is not a Ceph release (want e.g. v16.2.15)", tag)
	}
	var nums [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return cephVersion{}, fmt.Errorf("%q is not a Ceph release (want e.g. v16.2.15)", tag)
		}
		nums[i] = n
	}
	return cephVersion{nums[0], nums[1], nums[2]}, nil
}

// imageCephMajor returns the Ceph major release of an image, or 0 when the tag
// does not tell (latest, digest only, unparsable).
func imageCephMajor(s string) int {
	img, err := parseImage(s)
	if err != nil || img.Tag == "" {
		return 0
	}
	v, err := parseCephVersion(img.Tag)
	if err != nil {
		return 0
	}
	return v.Major
}
