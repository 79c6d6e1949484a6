// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package ceph

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestMonAddrs(t *testing.T) {
	for in, want := range map[string][]string{
		"10.0.0.1":                            {"10.0.0.1"},
		"10.0.0.1:6789":                       {"10.0.0.1"},
		"v2:10.0.0.1:3300/0":                  {"10.0.0.1"},
		"[v2:10.0.0.1:3300,v1:10.0.0.1:6789]": {"10.0.0.1", "10.0.0.1"},
		"[v2:10.0.0.1:3300/0,v1:10.0.0.1:6789/0],[v2:10.0.0.2:3300,v1:10.0.0.2:6789]": {"10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.2"},
		"10.0.0.1:6789 10.0.0.2:6789;10.0.0.3":                                        {"10.0.0.1", "10.0.0.2", "10.0.0.3"},
		"[::1]:3300":                                                                  {"::1"},
		"[v2:[fd00::1]:3300,v1:[fd00::1]:6789]":                                       {"fd00::1", "fd00::1"},
		"fd00::2":                                                                     {"fd00::2"},
		"[::ffff:10.0.0.9]:6789":                                                      {"10.0.0.9"},
	} {
		got, err := MonAddrs(in)
		if err != nil {
			t.Errorf("MonAddrs(%q): %v", in, err)
			continue
		}
		var s []string
		for _, a := range got {
			s = append(s, a.String())
		}
		if !slices.Equal(s, want) {
			t.Errorf("MonAddrs(%q) = %v, want %v", in, s, want)
		}
	}
	for _, in := range []string{"", " , ", "mon-a.rook-ceph.svc:6789", "v2:evil.example:3300", "10.0.0.1:6789,attacker"} {
		if _, err := MonAddrs(in); err == nil {
			t.Errorf("MonAddrs(%q): no error", in)
		}
	}
}

func TestCheckMonHost(t *testing.T) {
	nets := []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12"), netip.MustParsePrefix("fd00::/8")}
	for name, tc := range map[string]struct {
		monHost string
		nets    []netip.Prefix
		refused string // in the error; "" for allowed
	}{
		"no networks: anything":      {monHost: "attacker.example:6789"},
		"inside":                     {monHost: "[v2:10.96.1.2:3300,v1:10.96.1.2:6789]", nets: nets},
		"IPv6 inside":                {monHost: "[fd00::1]:3300", nets: nets},
		"one of three outside":       {monHost: "10.96.0.1,10.96.0.2,169.254.169.254", nets: nets, refused: "169.254.169.254 is outside"},
		"loopback outside":           {monHost: "v2:127.0.0.1:3300", nets: nets, refused: "127.0.0.1"},
		"a host name, with networks": {monHost: "mon.example:6789", nets: nets, refused: "not an IP address"},
		"an IPv4-mapped address":     {monHost: "[::ffff:127.0.0.1]:6789", nets: nets, refused: "127.0.0.1 is outside"},
	} {
		t.Run(name, func(t *testing.T) {
			err := CheckMonHost(tc.monHost, tc.nets)
			switch {
			case tc.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Errorf("error %v, want one saying %q", err, tc.refused)
			}
		})
	}
}

// TestParseNetworks: CIDRs are masked to their network; anything else is
// refused naming the value and the form.
func TestParseNetworks(t *testing.T) {
	nets, err := ParseNetworks([]string{"10.1.2.3/8", "fd00::1/8"})
	if err != nil || len(nets) != 2 || nets[0].String() != "10.0.0.0/8" || nets[1].String() != "fd00::/8" {
		t.Errorf("ParseNetworks = %v, %v", nets, err)
	}
	if _, err := ParseNetworks([]string{"10.0.0.1"}); err == nil || !strings.Contains(err.Error(), `"10.0.0.1" is not a network in CIDR form`) {
		t.Errorf("an address without a length: %v", err)
	}
}
