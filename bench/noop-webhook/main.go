// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

// Command noop-webhook is the floor for the load benchmark: a
// controller-runtime webhook server, configured like mgr-webhook (TLS 1.2+,
// HTTP/1.1, certwatcher), whose handler admits everything unchanged.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/rook-mgr/mgr-webhook/webhook"
)

func main() {
	var certDir, host string
	var port int
	flag.StringVar(&certDir, "cert-dir", "", "tls.crt and tls.key")
	flag.StringVar(&host, "host", "127.0.0.1", "bind address")
	flag.IntVar(&port, "port", 9443, "port")
	flag.Parse()
	srv, err := webhook.NewServer(webhook.ServerOptions{Host: host, Port: port, CertDir: certDir})
	if err != nil {
		fmt.Fprintln(os.Stderr, "noop-webhook:", err)
		os.Exit(1)
	}
	allow := &admission.Webhook{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Allowed("")
	})}
	srv.Register(webhook.MutatePath, allow)
	srv.Register(webhook.ValidatePath, allow)
	if err := srv.Start(ctrl.SetupSignalHandler()); err != nil {
		fmt.Fprintln(os.Stderr, "noop-webhook:", err)
		os.Exit(1)
	}
}
