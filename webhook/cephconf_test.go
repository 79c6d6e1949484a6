package webhook

import "testing"

func TestFSIDFromCephConf(t *testing.T) {
	for name, tc := range map[string]struct{ conf, want string }{
		"rook":               {"[global]\nfsid = dcef92d7-1f6a-4b9d-8ed0-0037d537d00b\nmon host = v2:10.0.0.1:3300\n", "dcef92d7-1f6a-4b9d-8ed0-0037d537d00b"},
		"no spaces":          {"[global]\nfsid=abc\n", "abc"},
		"trailing comment":   {"[global]\n  fsid = abc ; set by rook\n", "abc"},
		"commented out":      {"[global]\n# fsid = abc\n;fsid = def\n", ""},
		"other section only": {"[mon]\nfsid = abc\n[global]\nmon_host = x\n", ""},
		"none":               {"", ""},
		"later global":       {"[client]\nkeyring = /k\n[ global ]\nfsid = abc\n", "abc"},
		"fsid-like key":      {"[global]\nfsid_extra = abc\n", ""},
	} {
		t.Run(name, func(t *testing.T) {
			if got := fsidFromCephConf(tc.conf); got != tc.want {
				t.Errorf("fsid %q, want %q", got, tc.want)
			}
		})
	}
}
