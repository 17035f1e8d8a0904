package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func exportRecords() map[string]Record {
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 123456789, time.UTC)
	allowed := Record{Seq: 1, Time: t0, Tenant: "acme", Principal: "alice", RequestID: "7", Method: "tools/call",
		Server: "review", Tool: "start_review", Decision: Allowed, Rule: "policy:allow", LatencyUS: 1500,
		ArgsSHA256: strings.Repeat("a", 64), ResultSHA256: strings.Repeat("b", 64), PrevHash: Genesis}
	allowed.Hash = allowed.ComputeHash()
	hostile := Record{Seq: 2, Time: t0.Add(time.Second), Tenant: "acme", Principal: "eve|x=1", Method: "tools/call",
		Server: "git\\hub", Tool: "del|ete=repo]\"", Decision: Denied, Rule: "policy:deny-glob",
		Reason: "line one\r\nline two | a=b \\ \"q\" ]", LatencyUS: 40, PrevHash: allowed.Hash}
	hostile.Hash = hostile.ComputeHash()
	edge := Record{Seq: 3, Time: t0.Add(2 * time.Second), Method: "http", Decision: EdgeRejected, Rule: "edge:auth",
		Reason: "missing bearer token", PrevHash: hostile.Hash}
	edge.Hash = edge.ComputeHash()
	return map[string]Record{"allowed": allowed, "hostile": hostile, "edge": edge}
}

func TestExportGolden(t *testing.T) {
	t.Parallel()
	meta := ExportMeta{Version: "0.1.0", Hostname: "gw-1"}
	recs := exportRecords()
	var got bytes.Buffer
	for _, name := range []string{"allowed", "hostile", "edge"} {
		for f := FormatJSON; f <= FormatSyslog; f++ {
			line := Export(f, recs[name], meta)
			if bytes.ContainsAny(line, "\r\n") {
				t.Errorf("%s/%s: output spans lines: %q", name, f, line)
			}
			fmt.Fprintf(&got, "%s %s: %s\n", name, f, line)
		}
	}
	golden := filepath.Join("testdata", "export.golden")
	if *update {
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("export differs from %s (run with -update after an intended change)\ngot:\n%s", golden, got.Bytes())
	}
}

// TestCEFEscaping checks the structure without the golden: exactly seven
// unescaped header pipes, and extension values that split back into the
// original strings.
func TestCEFEscaping(t *testing.T) {
	t.Parallel()
	r := exportRecords()["hostile"]
	line := CEF(r, ExportMeta{Version: "1|2"})
	// Split the header at unescaped pipes, as a CEF parser does.
	var fields []string
	var cur strings.Builder
	ext := -1
	for i := 0; i < len(line) && ext < 0; i++ {
		switch c := line[i]; {
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
		case c == '|':
			fields = append(fields, cur.String())
			cur.Reset()
			if len(fields) == 7 {
				ext = i + 1
			}
		default:
			cur.WriteByte(c)
		}
	}
	if ext < 0 || fields[3] != "1|2" || fields[4] != "denied" || fields[5] != summary(r) || fields[6] != "6" {
		t.Fatalf("CEF header fields = %q: %s", fields, line)
	}
	if !strings.Contains(line, `|1\|2|`) || !strings.Contains(line, `del\|ete=repo]"`) {
		t.Fatalf("CEF header escaping wrong: %s", line)
	}
	got := parseCEFExt(line[ext:])
	if got["cs2"] != r.Tool || got["suser"] != r.Principal || got["reason"] != r.Reason || got["destinationServiceName"] != r.Server {
		t.Fatalf("CEF extension round trip: %q", got)
	}
}

// parseCEFExt splits a CEF extension the way a SIEM does: a key starts after
// a space and ends at an unescaped '='.
func parseCEFExt(s string) map[string]string {
	out := map[string]string{}
	var key, val strings.Builder
	inKey := true
	flush := func() {
		out[key.String()] = strings.TrimSuffix(val.String(), " ")
		key.Reset()
		val.Reset()
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inKey && c == '=':
			inKey = false
		case inKey:
			key.WriteByte(c)
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				val.WriteByte('\n')
			case 'r':
				val.WriteByte('\r')
			default:
				val.WriteByte(s[i])
			}
		case c == ' ' && nextIsKey(s[i+1:]):
			flush()
			inKey = true
		default:
			val.WriteByte(c)
		}
	}
	flush()
	return out
}

func nextIsKey(s string) bool {
	eq := strings.IndexByte(s, '=')
	if eq <= 0 {
		return false
	}
	for _, c := range s[:eq] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func TestSyslogShape(t *testing.T) {
	t.Parallel()
	r := exportRecords()["hostile"]
	line := Syslog(r, ExportMeta{Hostname: "bad host"})
	// facility 13 (log audit) * 8 + severity 4 (warning) for a denial.
	if !strings.HasPrefix(line, "<108>1 2026-07-01T12:00:01.123456Z - bastion - tools/call [bastion@32473 seq=\"2\"") {
		t.Fatalf("syslog header wrong: %s", line)
	}
	if !strings.Contains(line, `tool="del|ete=repo\]\""`) || !strings.Contains(line, `server="git\\hub"`) {
		t.Fatalf("SD-PARAM escaping wrong: %s", line)
	}
}

func TestOCSFShape(t *testing.T) {
	t.Parallel()
	r := exportRecords()["hostile"]
	var ev struct {
		ClassUID  int    `json:"class_uid"`
		TypeUID   int    `json:"type_uid"`
		StatusID  int    `json:"status_id"`
		StatusCd  string `json:"status_code"`
		Time      int64  `json:"time"`
		Actor     struct{ User struct{ UID string } }
		API       struct{ Operation string }
		Metadata  struct{ UID string }
		Resources []struct{ Name string }
	}
	if err := json.Unmarshal(OCSF(r, ExportMeta{}), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.ClassUID != 6003 || ev.TypeUID != 600399 || ev.StatusID != 2 || ev.StatusCd != r.Rule ||
		ev.Time != r.Time.UnixMilli() || ev.Actor.User.UID != r.Principal || ev.API.Operation != "tools/call" ||
		ev.Metadata.UID != r.Hash || len(ev.Resources) != 1 || ev.Resources[0].Name != r.Tool {
		t.Fatalf("OCSF event = %+v", ev)
	}
}

func TestParseFormat(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Format{"json": FormatJSON, " OCSF ": FormatOCSF, "Cef": FormatCEF, "syslog": FormatSyslog} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseFormat("csv"); err == nil {
		t.Error("ParseFormat(csv) succeeded")
	}
}

func TestDefaultDir(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_DATA_HOME": "/x", "HOME": "/h"}, "/x/bastion/audit"},
		{map[string]string{"XDG_DATA_HOME": "relative", "HOME": "/h"}, "/h/.local/share/bastion/audit"},
		{map[string]string{"HOME": "/h"}, "/h/.local/share/bastion/audit"},
		{map[string]string{}, ""},
	}
	for _, c := range cases {
		got, err := DefaultDir(env(c.env))
		if got != c.want || (err == nil) != (c.want != "") {
			t.Errorf("DefaultDir(%v) = %q, %v; want %q", c.env, got, err, c.want)
		}
	}
}
