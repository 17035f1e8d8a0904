package audit

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Format is a SIEM export format for Tail output.
type Format int

// The export formats.
const (
	FormatJSON   Format = iota // the ledger line itself
	FormatOCSF                 // OCSF 1.4 API Activity (class 6003) JSON
	FormatCEF                  // ArcSight Common Event Format
	FormatSyslog               // RFC 5424 with structured data
)

var formatNames = [...]string{"json", "ocsf", "cef", "syslog"}

// String returns the format's name as ParseFormat accepts it.
func (f Format) String() string {
	if f >= 0 && int(f) < len(formatNames) {
		return formatNames[f]
	}
	return "Format(" + strconv.Itoa(int(f)) + ")"
}

// ParseFormat returns the format named s (case-insensitive).
func ParseFormat(s string) (Format, error) {
	for i, n := range formatNames {
		if strings.EqualFold(strings.TrimSpace(s), n) {
			return Format(i), nil
		}
	}
	return 0, fmt.Errorf("unknown format %q (expected one of %s)", s, strings.Join(formatNames[:], ", "))
}

// ExportMeta is what an export line says about its producer.
type ExportMeta struct {
	Version  string // bastion's version
	Hostname string // the syslog HOSTNAME; "" or invalid gives "-"
}

// Export renders r as one line (without a trailing newline) in format f.
func Export(f Format, r Record, m ExportMeta) []byte {
	switch f {
	case FormatOCSF:
		return OCSF(r, m)
	case FormatCEF:
		return []byte(CEF(r, m))
	case FormatSyslog:
		return []byte(Syslog(r, m))
	default:
		return r.AppendCanonical(nil)
	}
}

// severity is one decision's weight in each format.
type severity struct {
	ocsfID  int    // OCSF severity_id: 1 informational ... 5 critical
	ocsf    string // OCSF severity caption
	cef     int    // CEF 0-10
	syslog  int    // RFC 5424 severity: 2 crit ... 6 info
	success bool
}

func severityOf(d Decision) severity {
	switch d {
	case Allowed:
		return severity{1, "Informational", 2, 6, true}
	case ApprovalPending:
		return severity{1, "Informational", 3, 5, false}
	case Denied, EdgeRejected:
		return severity{3, "Medium", 6, 4, false}
	case UpstreamError, Timeout:
		return severity{2, "Low", 5, 3, false}
	case Trap:
		return severity{4, "High", 8, 3, false}
	case Recovered:
		return severity{4, "High", 9, 2, false}
	default:
		return severity{99, "Other", 5, 5, false}
	}
}

// summary is a one-line human description: "denied tools/call github/delete_repo".
func summary(r Record) string {
	s := string(r.Decision)
	if r.Method != "" {
		s += " " + r.Method
	}
	switch {
	case r.Server != "" && r.Tool != "":
		s += " " + r.Server + "/" + r.Tool
	case r.Server != "" || r.Tool != "":
		s += " " + r.Server + r.Tool
	}
	return s
}

// OCSF renders r as an OCSF 1.4.0 API Activity event (category 6, class
// 6003). A governed MCP request is none of Create/Read/Update/Delete, so the
// activity is 99 Other with the MCP method as activity_name; the allow/deny
// outcome is status_id (1 Success, 2 Failure) with the rule and reason in
// status_code and status_detail. Fields OCSF has no place for go under
// unmapped. Keys are sorted (encoding/json sorts map keys), so output is
// deterministic.
func OCSF(r Record, m ExportMeta) []byte {
	sev := severityOf(r.Decision)
	status, statusID := "Failure", 2
	if sev.success {
		status, statusID = "Success", 1
	}
	user := map[string]any{}
	if r.Principal != "" {
		user["uid"] = r.Principal
		user["name"] = r.Principal
	}
	if r.Tenant != "" {
		user["org"] = map[string]any{"uid": r.Tenant, "name": r.Tenant}
	}
	api := map[string]any{"operation": r.Method}
	if r.Server != "" {
		api["service"] = map[string]any{"name": r.Server}
	}
	if r.RequestID != "" {
		api["request"] = map[string]any{"uid": r.RequestID}
	}
	ev := map[string]any{
		"activity_id":   99,
		"activity_name": r.Method,
		"category_uid":  6,
		"category_name": "Application Activity",
		"class_uid":     6003,
		"class_name":    "API Activity",
		"type_uid":      600399,
		"type_name":     "API Activity: Other",
		"time":          r.Time.UnixMilli(),
		"duration":      r.LatencyUS / 1000,
		"severity_id":   sev.ocsfID,
		"severity":      sev.ocsf,
		"status":        status,
		"status_id":     statusID,
		"status_code":   r.Rule,
		"status_detail": r.Reason,
		"message":       summary(r),
		"actor":         map[string]any{"user": user},
		"api":           api,
		"metadata": map[string]any{
			"version":  "1.4.0",
			"uid":      r.Hash,
			"sequence": r.Seq,
			"product":  map[string]any{"name": "bastion", "vendor_name": "bastion", "version": m.Version},
		},
		"unmapped": map[string]any{
			"seq": r.Seq, "decision": string(r.Decision), "rule": r.Rule, "tool": r.Tool,
			"latency_us": r.LatencyUS, "args_sha256": r.ArgsSHA256, "result_sha256": r.ResultSHA256,
			"prev_hash": r.PrevHash, "hash": r.Hash, "time": r.Time.UTC().Format(timeLayout),
		},
	}
	if r.Tool != "" {
		ev["resources"] = []any{map[string]any{"type": "mcp_tool", "name": r.Tool}}
	}
	b, _ := json.Marshal(ev) // maps of strings and integers always marshal
	return b
}

// CEF renders r as one CEF:0 line: CEF:0|bastion|bastion|<version>|<decision>|<summary>|<severity>|<extension>.
// Header fields escape \ and | and turn control characters (CR, LF...) into
// spaces; extension values escape \ and =, write CR and LF as \r and \n, and
// turn other control characters into spaces.
func CEF(r Record, m ExportMeta) string {
	var b strings.Builder
	b.WriteString("CEF:0|bastion|bastion|")
	b.WriteString(cefHeader(m.Version))
	b.WriteByte('|')
	b.WriteString(cefHeader(string(r.Decision)))
	b.WriteByte('|')
	b.WriteString(cefHeader(summary(r)))
	b.WriteByte('|')
	b.WriteString(strconv.Itoa(severityOf(r.Decision).cef))
	b.WriteByte('|')
	first := true
	ext := func(k, v string) {
		if !first {
			b.WriteByte(' ')
		}
		first = false
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(cefExt(v))
	}
	ext("rt", strconv.FormatInt(r.Time.UnixMilli(), 10))
	ext("externalId", strconv.FormatUint(r.Seq, 10))
	ext("act", string(r.Decision))
	if r.Method != "" {
		ext("requestMethod", r.Method)
	}
	if r.Principal != "" {
		ext("suser", r.Principal)
	}
	if r.Server != "" {
		ext("destinationServiceName", r.Server)
	}
	ext("cn1Label", "latencyUs")
	ext("cn1", strconv.FormatUint(r.LatencyUS, 10))
	labelled := []struct{ label, v string }{
		{"tenant", r.Tenant}, {"tool", r.Tool}, {"rule", r.Rule}, {"requestId", r.RequestID}, {"hash", r.Hash}, {"argsSha256", r.ArgsSHA256},
	}
	for i, f := range labelled {
		if f.v == "" {
			continue
		}
		n := strconv.Itoa(i + 1)
		ext("cs"+n+"Label", f.label)
		ext("cs"+n, f.v)
	}
	if r.Reason != "" {
		ext("reason", r.Reason)
	}
	return b.String()
}

func cefHeader(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c == '\\' || c == '|':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c < 0x20 || c == 0x7f:
			b.WriteByte(' ')
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

func cefExt(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c == '\\' || c == '=':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20 || c == 0x7f:
			b.WriteByte(' ')
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// sdID is the structured-data id. 32473 is the private enterprise number
// RFC 5612 reserves for documentation; a registered number replaces it.
const sdID = "bastion@32473"

// Syslog renders r as one RFC 5424 line: <PRI>1 TIMESTAMP HOSTNAME bastion -
// MSGID [bastion@32473 ...] MSG, with facility 13 (log audit) and the
// severity of the decision. TIMESTAMP has microseconds (the RFC's maximum),
// HOSTNAME and MSGID are printable ASCII or "-", parameter values escape
// " \ and ], and control characters become spaces so the record stays on one
// line.
func Syslog(r Record, m ExportMeta) string {
	sev := severityOf(r.Decision)
	var b strings.Builder
	b.WriteByte('<')
	b.WriteString(strconv.Itoa(13*8 + sev.syslog))
	b.WriteString(">1 ")
	b.WriteString(r.Time.UTC().Truncate(time.Microsecond).Format("2006-01-02T15:04:05.000000Z"))
	b.WriteByte(' ')
	b.WriteString(syslogToken(m.Hostname, 255))
	b.WriteString(" bastion - ")
	b.WriteString(syslogToken(r.Method, 32))
	b.WriteString(" [")
	b.WriteString(sdID)
	param := func(k, v string) {
		b.WriteByte(' ')
		b.WriteString(k)
		b.WriteString(`="`)
		b.WriteString(sdValue(v))
		b.WriteByte('"')
	}
	param("seq", strconv.FormatUint(r.Seq, 10))
	param("decision", string(r.Decision))
	param("rule", r.Rule)
	param("tenant", r.Tenant)
	param("principal", r.Principal)
	param("server", r.Server)
	param("tool", r.Tool)
	param("requestId", r.RequestID)
	param("latencyUs", strconv.FormatUint(r.LatencyUS, 10))
	param("argsSha256", r.ArgsSHA256)
	param("resultSha256", r.ResultSHA256)
	param("prevHash", r.PrevHash)
	param("hash", r.Hash)
	b.WriteString("] ")
	msg := summary(r)
	if r.Reason != "" {
		msg += ": " + r.Reason
	}
	b.WriteString(oneLine(msg))
	return b.String()
}

// syslogToken returns s if it is 1..max printable US-ASCII characters
// without spaces, else "-" (the RFC's NILVALUE).
func syslogToken(s string, max int) string {
	if s == "" || len(s) > max {
		return "-"
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 33 || s[i] > 126 {
			return "-"
		}
	}
	return s
}

func sdValue(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c == '"' || c == '\\' || c == ']':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c < 0x20 || c == 0x7f:
			b.WriteByte(' ')
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

func oneLine(s string) string {
	return strings.Map(func(c rune) rune {
		if c < 0x20 || c == 0x7f {
			return ' '
		}
		return c
	}, s)
}
