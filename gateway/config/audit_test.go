package config

import (
	"strings"
	"testing"
	"time"
)

// TestAuditApprovalsUnprefixed: the gateway's [audit] and [approvals]
// tables and a server's unprefixed flag decode, and a typo in them is still
// refused by the strict decoder.
func TestAuditApprovalsUnprefixed(t *testing.T) {
	t.Parallel()
	f, err := Parse("t.toml", []byte(`
[server.fx]
kind = "review"
unprefixed = true

[audit]
dir = "/var/lib/bastion/audit"
key_file = "/etc/bastion/audit.key"
checkpoint_every = 500
checkpoint_interval = "10s"
max_file_mb = 16

[approvals]
file = "/var/lib/bastion/approvals.json"
`))
	if err != nil {
		t.Fatal(err)
	}
	if !f.Servers["fx"].Unprefixed || f.Audit.Dir != "/var/lib/bastion/audit" || f.Audit.CheckpointEvery != 500 ||
		time.Duration(f.Audit.CheckpointInterval) != 10*time.Second || f.Audit.MaxFileMB != 16 ||
		f.Approvals.File != "/var/lib/bastion/approvals.json" || f.Audit.KeyFile != "/etc/bastion/audit.key" {
		t.Errorf("decoded %+v %+v %+v", f.Audit, f.Approvals, f.Servers["fx"])
	}
	_, err = Parse("t.toml", []byte("[audit]\ndirr = \"x\"\n"))
	if err == nil || !strings.Contains(err.Error(), "t.toml:2") {
		t.Errorf("unknown [audit] key: %v", err)
	}
}
