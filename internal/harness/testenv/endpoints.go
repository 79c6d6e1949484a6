// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HostIP is an address of this machine that an EndpointSlice may hold (the
// API server refuses loopback addresses there): its first non-loopback IPv4.
func HostIP() (string, error) {
	// The address of the default route first (a UDP "connection" sends
	// nothing, it only asks for a route). A real node's API server serves
	// here, and hack/node.sh takes its node's address from that server's.
	if c, err := net.Dial("udp4", "192.0.2.1:9"); err == nil {
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).IP.String(), nil
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String(), nil
		}
	}
	return "", errors.New("this machine has no non-loopback IPv4 address for a Service endpoint")
}

// ServeServiceLocally makes Service ns/name's port portName lead to ip:port,
// with an EndpointSlice and an Endpoints object of its own (no endpoint
// controller runs in a bare API server): API servers from 1.33 route to a
// Service by its EndpointSlices, older ones by its Endpoints. The API server
// must route by endpoints (ServiceRouting).
func ServeServiceLocally(ctx context.Context, cl client.Client, ns, name, portName, ip string, port int) error {
	svc := &corev1.Service{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
		return err
	}
	found := false
	for _, p := range svc.Spec.Ports {
		found = found || p.Name == portName
	}
	if !found {
		return fmt.Errorf("Service %s/%s has no port %q", ns, name, portName)
	}
	ready := true
	proto := corev1.ProtocolTCP
	p := int32(port)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-local", Namespace: ns, Labels: map[string]string{
			discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "mgr-webhook-tests",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &p, Protocol: &proto}},
	}
	if err := cl.Create(ctx, slice); err != nil {
		return err
	}
	//nolint:staticcheck // Endpoints are what API servers before 1.33 route by.
	endpoints := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Subsets: []corev1.EndpointSubset{{ //nolint:staticcheck // as above
			Addresses: []corev1.EndpointAddress{{IP: ip}},
			Ports:     []corev1.EndpointPort{{Name: portName, Port: p, Protocol: proto}}, //nolint:staticcheck // as above
		}},
	}
	return cl.Create(ctx, endpoints)
}
