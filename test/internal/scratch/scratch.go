// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Package scratch gives the mutation tools a work directory that goes with
// them however they stop.
package scratch

import (
	"os"
	"os/signal"
	"syscall"
)

// Dir makes a temporary directory and removes it when the process is
// interrupted or terminated (make mutation stops its tools so); the caller
// removes it when it ends normally.
func Dir(pattern string) (string, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	stopped := make(chan os.Signal, 1)
	signal.Notify(stopped, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-stopped
		os.RemoveAll(dir)
		os.Exit(1)
	}()
	return dir, nil
}
