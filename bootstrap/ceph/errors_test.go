// Copyright 2026 The mgr-webhook Authors.
// SPDX-License-Identifier: Apache-2.0

package ceph

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestErrorClasses: each class a caller decides by (retry, treat as
// missing, give up) holds for its answers only, through wrapping too, and
// each error says its command, errno and message.
func TestErrorClasses(t *testing.T) {
	type classes struct{ invalid, notFound, retryable, unknownCommand, unavailable bool }
	for name, tc := range map[string]struct {
		err    error
		want   classes
		result string
		says   string
	}{
		"EINVAL, other caps": {&Error{Command: "auth get-or-create-key", Errno: syscall.EINVAL, Message: "key for mgr.a exists but cap mon does not match"},
			classes{invalid: true}, "einval", "ceph auth get-or-create-key: EINVAL (errno 22): key for mgr.a exists"},
		"EINVAL, a module loading": {fmt.Errorf("enabling: %w", &Error{Command: "dashboard create-self-signed-cert", Errno: syscall.EINVAL, Message: "no valid command found; 10 closest matches:"}),
			classes{invalid: true, retryable: true, unknownCommand: true}, "einval", "EINVAL (errno 22): no valid command found"},
		"EINVAL, mentioning it later": {&Error{Command: "x", Errno: syscall.EINVAL, Message: "bad value: no valid command found"},
			classes{invalid: true}, "einval", "EINVAL"},
		"ENOENT, wrapped": {fmt.Errorf("a: %w", fmt.Errorf("b: %w", &Error{Command: "auth get-key", Errno: syscall.ENOENT, Message: "no such entity"})),
			classes{notFound: true}, "enoent", "ENOENT (errno 2)"},
		"EBUSY":     {&Error{Command: "x", Errno: syscall.EBUSY}, classes{retryable: true}, "ebusy", "EBUSY (errno 16)"},
		"EAGAIN":    {&Error{Command: "x", Errno: syscall.EAGAIN}, classes{retryable: true}, "eagain", "EAGAIN (errno 11)"},
		"ETIMEDOUT": {&Error{Command: "x", Errno: syscall.ETIMEDOUT}, classes{retryable: true}, "etimedout", "ETIMEDOUT (errno 110)"},
		"EEXIST":    {&Error{Command: "x", Errno: syscall.EEXIST}, classes{}, "eexist", "EEXIST (errno 17)"},
		"EPERM":     {&Error{Command: "x", Errno: syscall.EPERM}, classes{}, "eperm", "EPERM (errno 1)"},
		"EACCES":    {&Error{Command: "x", Errno: syscall.EACCES}, classes{}, "eacces", "EACCES (errno 13)"},
		"an errno without a name": {&Error{Command: "x", Errno: syscall.ENOSPC, Message: "full"},
			classes{}, "error", "ceph x: error (errno 28): full"},
		"unreachable": {&Error{Command: "mgr dump", Unavailable: true, Message: "timed out after 5s"},
			classes{retryable: true, unavailable: true}, "unavailable", "ceph mgr dump: cluster unreachable: timed out after 5s"},
		"did not exit":     {&Error{Command: "mgr dump", Message: "signal: killed"}, classes{}, "error", "ceph mgr dump: signal: killed"},
		"not a ceph error": {errors.New("EINVAL"), classes{}, "error", "EINVAL"},
		"no error":         {nil, classes{}, "ok", ""},
	} {
		t.Run(name, func(t *testing.T) {
			got := classes{IsInvalid(tc.err), IsNotFound(tc.err), IsRetryable(tc.err), IsUnknownCommand(tc.err), IsUnavailable(tc.err)}
			if got != tc.want {
				t.Errorf("classes %+v, want %+v", got, tc.want)
			}
			if r := resultOf(tc.err); r != tc.result {
				t.Errorf("resultOf = %q, want %q", r, tc.result)
			}
			if tc.err != nil && !strings.Contains(tc.err.Error(), tc.says) {
				t.Errorf("%q does not say %q", tc.err.Error(), tc.says)
			}
		})
	}
}

// TestFirstLine: an error quotes one line of stderr, never more than 240
// bytes of it.
func TestFirstLine(t *testing.T) {
	long := strings.Repeat("x", 241)
	for name, tc := range map[string]struct{ stderr, want string }{
		"one line":             {"Error EINVAL: bad\n", "Error EINVAL: bad"},
		"after blank lines":    {"\n  \n\tError ENOENT: gone  \nsecond\n", "Error ENOENT: gone"},
		"nothing":              {" \n\n", "no message"},
		"240 bytes, kept":      {long[:240], long[:240]},
		"241 bytes, truncated": {long, long[:240] + "..."},
	} {
		t.Run(name, func(t *testing.T) {
			if got := firstLine(tc.stderr); got != tc.want {
				t.Errorf("firstLine = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestParseKey: a key, or an error that quotes nothing of the output.
func TestParseKey(t *testing.T) {
	for name, tc := range map[string]struct{ out, want string }{
		"a key":       {`{"key":"AQBzY2VwaA=="}`, "AQBzY2VwaA=="},
		"empty key":   {`{"key":""}`, ""},
		"no key":      {`{"entity":"mgr.a"}`, ""},
		"not JSON":    {`key = AQBzY2VwaA==`, ""},
		"nothing out": {``, ""},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := parseKey("auth get-key", []byte(tc.out))
			if got != tc.want || (tc.want == "") != (err != nil) {
				t.Fatalf("parseKey = %q, %v; want %q", got, err, tc.want)
			}
			if err != nil && (!strings.Contains(err.Error(), "auth get-key: unexpected output (no key)") || strings.Contains(err.Error(), "AQ")) {
				t.Errorf("error %q", err)
			}
		})
	}
}

// TestMemFile: the credential file a ceph child reads is closed on exec
// unless passed on, holds exactly the data, and is sealed: nothing can
// write, grow, shrink or unseal it.
func TestMemFile(t *testing.T) {
	data := []byte("[client.admin]\n\tkey = AQBzY2VwaA==\n")
	f, err := memFile("keyring", data)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("FD_CLOEXEC not set (flags %#x, %v): every child would inherit the key", flags, err)
	}
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	want := unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE | unix.F_SEAL_SEAL
	if err != nil || seals != want {
		t.Errorf("seals %#x (%v), want %#x", seals, err, want)
	}
	if _, err := f.WriteAt([]byte("x"), 0); err == nil {
		t.Error("a sealed file took a write")
	}
	if err := f.Truncate(1); err == nil {
		t.Error("a sealed file shrank")
	}
	got, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<20))
	if err != nil || string(got) != string(data) {
		t.Errorf("holds %q (%v), want the data", got, err)
	}
}

// TestModuleInfoForms: a module list entry as an object, or as the bare
// name of a release that does not say whether it can run.
func TestModuleInfoForms(t *testing.T) {
	var got []ModuleInfo
	if err := json.Unmarshal([]byte(`["status", {"name": "rook", "can_run": false, "error_string": "no orchestrator"}]`), &got); err != nil {
		t.Fatal(err)
	}
	want := []ModuleInfo{{Name: "status", CanRun: true}, {Name: "rook", CanRun: false, ErrorString: "no orchestrator"}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if err := json.Unmarshal([]byte(`[7]`), &got); err == nil {
		t.Error("a number read as a module")
	}
}
