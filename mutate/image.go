// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package mutate

import (
	"github.com/distribution/reference"

	"github.com/rook-mgr/mgr-webhook/contract"
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

// imageCephRelease returns the Ceph release of an image, or the zero
// version when the tag does not tell (latest, digest only, unparsable).
func imageCephRelease(s string) contract.CephVersion {
	img, err := parseImage(s)
	if err != nil || img.Tag == "" {
		return contract.CephVersion{}
	}
	v, err := contract.ParseCephTag(img.Tag)
	if err != nil {
		return contract.CephVersion{}
	}
	return v
}
