// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Document is one object of a multi-document YAML stream: its text, for a
// strict decode into a typed object, and the object.
type Document struct {
	Raw    []byte
	Object *unstructured.Unstructured
}

// Documents splits a YAML stream (kustomize's build, a rendered chart) into
// its objects, in order; empty documents (comments only) are left out.
func Documents(data []byte) ([]Document, error) {
	var docs []Document
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &u.Object); err != nil {
			return nil, fmt.Errorf("document %d: %w", len(docs)+1, err)
		}
		if len(u.Object) > 0 {
			docs = append(docs, Document{Raw: raw, Object: u})
		}
	}
}

// Objects is Documents' objects alone.
func Objects(data []byte) ([]*unstructured.Unstructured, error) {
	docs, err := Documents(data)
	if err != nil {
		return nil, err
	}
	objs := make([]*unstructured.Unstructured, len(docs))
	for i, d := range docs {
		objs[i] = d.Object
	}
	return objs, nil
}
