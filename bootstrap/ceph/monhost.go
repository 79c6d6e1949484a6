// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package ceph

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// MonAddrs are the IP addresses a mon_host value names, in Ceph's forms:
// "10.0.0.1", "10.0.0.1:6789", "v2:10.0.0.1:3300/0", an address vector
// "[v2:10.0.0.1:3300,v1:10.0.0.1:6789]", IPv6 in brackets, any of them
// separated by commas, spaces or semicolons. A host name is an error: it
// cannot be judged without a DNS lookup the controller does not make.
func MonAddrs(monHost string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, tok := range strings.FieldsFunc(monHost, func(r rune) bool { return r == ',' || r == ' ' || r == ';' || r == '\t' }) {
		a, err := monAddr(tok)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("mon_host %q names no address", monHost)
	}
	return out, nil
}

// monAddr is the address of one mon_host entry.
func monAddr(tok string) (netip.Addr, error) {
	s := tok
	// The brackets of an address vector, around its first and after its
	// last entry ("[v2:a:3300" and "v1:a:6789]").
	if rest, ok := strings.CutPrefix(s, "["); ok && (strings.HasPrefix(rest, "v1:") || strings.HasPrefix(rest, "v2:") || strings.HasPrefix(rest, "any:")) {
		s = rest
	}
	for _, p := range []string{"v1:", "v2:", "any:"} {
		if rest, ok := strings.CutPrefix(s, p); ok {
			s = rest
			break
		}
	}
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[:i] // the nonce
	}
	for _, cand := range []string{s, strings.TrimSuffix(s, "]")} {
		if ap, err := netip.ParseAddrPort(cand); err == nil {
			return ap.Addr().Unmap(), nil
		}
		if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(cand, "["), "]")); err == nil {
			return a.Unmap(), nil
		}
	}
	return netip.Addr{}, fmt.Errorf("mon_host entry %q is not an IP address (with an optional port): host names are not allowed while the mon networks are restricted", tok)
}

// CheckMonHost refuses a mon_host that names an address outside nets (none:
// any address is allowed), naming the address and the networks.
func CheckMonHost(monHost string, nets []netip.Prefix) error {
	if len(nets) == 0 {
		return nil
	}
	addrs, err := MonAddrs(monHost)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if !slices.ContainsFunc(nets, func(n netip.Prefix) bool { return n.Contains(a) }) {
			return fmt.Errorf("mon address %s is outside the allowed mon networks %v", a, nets)
		}
	}
	return nil
}

// ParseNetworks reads --mon-networks: CIDRs, each masked to its network.
func ParseNetworks(cidrs []string) ([]netip.Prefix, error) {
	var nets []netip.Prefix
	for _, n := range cidrs {
		p, err := netip.ParsePrefix(n)
		if err != nil {
			return nil, fmt.Errorf("--mon-networks: %q is not a network in CIDR form (10.96.0.0/12, fd00::/8): %w", n, err)
		}
		nets = append(nets, p.Masked())
	}
	return nets, nil
}
