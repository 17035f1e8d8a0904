package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/bastion-mcp/bastion/internal/clip"
)

// Decision is what became of one governed request. The gateway may record
// other lowercase words; these are the ones bastion emits.
type Decision string

// The decisions bastion records.
const (
	Attempting      Decision = "attempt"          // an allowed call about to be dispatched; its outcome record completes it
	Allowed         Decision = "allowed"          // the call reached the upstream and it answered
	Denied          Decision = "denied"           // a gate refused the call; Rule names the gate/rule
	ApprovalPending Decision = "approval_pending" // the call was parked for a human
	UpstreamError   Decision = "upstream_error"   // the upstream failed or closed
	Timeout         Decision = "timeout"          // the per-call deadline passed
	Trap            Decision = "trap"             // a Wasm instance trapped (memory cap, deadline)
	EdgeRejected    Decision = "edge_rejected"    // the HTTP edge refused the request (401/403/413/503...)
	Recovered       Decision = "recovered"        // written by Open after it truncated a torn tail, or after the ledger recovered from a write failure
)

// formatVersion is the record format written today. It is part of the hashed
// bytes, so one format can never be confused with another. Version 2 added
// "attempt" and "warnings", version 3 "trace_id"; version 1 and 2 records
// (without them) still parse and verify.
const formatVersion = 3

// checkpointVersion is the checkpoint format, which version 3 records did
// not change: checkpoints written beside version 2 records still verify.
const checkpointVersion = 2

// Genesis is the prev_hash of the first record of every ledger.
const Genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// timeLayout is the one time form a record may carry: RFC 3339 in UTC with
// exactly nine fractional digits, so each instant has one spelling.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// Record is one line of the ledger. Every field is always present on disk
// (empty strings included), so the encoding has no optional parts.
//
// The canonical encoding is a JSON object in the RFC 8785 (JCS) style for the
// subset used here: keys sorted bytewise (they are ASCII), no insignificant
// whitespace, strings in UTF-8 escaped exactly as JCS does (\" \\ \b \f \n \r
// \t, other controls below U+0020 as \u00xx with lowercase hex, everything
// else literal), and numbers as unsigned decimal integers without sign,
// exponent or leading zeros (seq and latency are uint64; JCS's IEEE-754 rule
// agrees with this below 2^53). Time is the fixed string form of timeLayout.
// Hash is hex SHA-256 over the canonical encoding of the record with the
// "hash" key left out; PrevHash is the previous record's Hash, or Genesis.
type Record struct {
	Seq          uint64    // 1 for the first record, then +1 with no gaps
	Time         time.Time // when the ledger accepted the record, UTC
	Tenant       string    // the principal's tenant; "" when unauthenticated
	Principal    string    // the principal's id within Tenant; "" when unauthenticated
	RequestID    string    // the JSON-RPC or HTTP request id, when there is one
	Method       string    // "tools/call", "resources/read", "connect", "http"...
	Server       string    // the upstream server, "" for edge rejections
	Tool         string    // the tool, resource or prompt name as the client sent it
	Decision     Decision  // what happened
	Rule         string    // which gate or rule decided ("policy:deny-glob", "pin:drift"...)
	Reason       string    // the client-visible reason (never a secret: inspect redacts first)
	Attempt      uint64    // the seq of the attempt record this outcome completes; 0 when none (v2)
	Warnings     []string  // findings that did not deny, "RULE: REASON" (rule ids and surface, no values) (v2)
	TraceID      string    // the OpenTelemetry trace id of the request (32 lowercase hex digits), "" when untraced (v3)
	LatencyUS    uint64    // microseconds from receipt to outcome
	ArgsSHA256   string    // hex SHA-256 of the raw arguments, "" when there were none
	ResultSHA256 string    // hex SHA-256 of the raw result, "" when there was none
	PrevHash     string    // the previous record's Hash, Genesis for seq 1
	Hash         string    // hex SHA-256 of this record's canonical form without "hash"
	Version      uint64    // the format version ("v"); 0 means the current one
}

// version returns the format r is encoded in.
func (r *Record) version() uint64 {
	if r.Version == 0 {
		return formatVersion
	}
	return r.Version
}

// AppendCanonical appends r's canonical JSON encoding (with the hash field)
// to b and returns the extended buffer.
func (r *Record) AppendCanonical(b []byte) []byte {
	b, _ = r.appendJSON(b, true)
	return b
}

// ComputeHash returns the hash r should carry: hex SHA-256 over the canonical
// encoding of r without its hash field. It ignores r.Hash.
func (r *Record) ComputeHash() string {
	var buf [512]byte
	enc, _ := r.appendJSON(buf[:0], false)
	sum := sha256.Sum256(enc)
	return hex.EncodeToString(sum[:])
}

// hashField is the length of `,"hash":"` + 64 hex digits + `"`.
const hashField = len(`,"hash":""`) + 2*sha256.Size

// appendSealed sets r.Hash and appends r's canonical encoding to b, encoding
// r once: the encoding without the hash is what the hash covers, so it is
// hashed where it was written and the hash field spliced in at its place.
// Append does this under the ledger's mutex, where a second encoding would
// hold every other appender up.
func (r *Record) appendSealed(b []byte) []byte {
	start := len(b)
	b, at := r.appendJSON(b, false)
	sum := sha256.Sum256(b[start:])
	end := len(b)
	b = append(b, make([]byte, hashField)...)
	copy(b[at+hashField:], b[at:end])
	n := copy(b[at:], `,"hash":"`)
	hex.Encode(b[at+n:], sum[:])
	b[at+hashField-1] = '"'
	r.Hash = string(b[at+n : at+hashField-1])
	return b
}

// appendJSON appends r's canonical encoding, with its hash field or
// without, and returns where the hash field starts (or would).
func (r *Record) appendJSON(b []byte, withHash bool) ([]byte, int) {
	v := r.version()
	b = append(b, `{"args_sha256":`...)
	b = appendString(b, r.ArgsSHA256)
	if v >= 2 {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendUint(b, r.Attempt, 10)
	}
	b = append(b, `,"decision":`...)
	b = appendString(b, string(r.Decision))
	at := len(b)
	if withHash {
		b = append(b, `,"hash":`...)
		b = appendString(b, r.Hash)
	}
	b = append(b, `,"latency_us":`...)
	b = strconv.AppendUint(b, r.LatencyUS, 10)
	b = append(b, `,"method":`...)
	b = appendString(b, r.Method)
	b = append(b, `,"prev_hash":`...)
	b = appendString(b, r.PrevHash)
	b = append(b, `,"principal":`...)
	b = appendString(b, r.Principal)
	b = append(b, `,"reason":`...)
	b = appendString(b, r.Reason)
	b = append(b, `,"request_id":`...)
	b = appendString(b, r.RequestID)
	b = append(b, `,"result_sha256":`...)
	b = appendString(b, r.ResultSHA256)
	b = append(b, `,"rule":`...)
	b = appendString(b, r.Rule)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	b = append(b, `,"server":`...)
	b = appendString(b, r.Server)
	b = append(b, `,"tenant":`...)
	b = appendString(b, r.Tenant)
	b = append(b, `,"time":"`...)
	b = r.Time.UTC().AppendFormat(b, timeLayout)
	b = append(b, `","tool":`...)
	b = appendString(b, r.Tool)
	if v >= 3 {
		b = append(b, `,"trace_id":`...)
		b = appendString(b, r.TraceID)
	}
	b = append(b, `,"v":`...)
	b = strconv.AppendUint(b, v, 10)
	if v >= 2 {
		b = append(b, `,"warnings":[`...)
		for i, w := range r.Warnings {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, w)
		}
		b = append(b, ']')
	}
	return append(b, '}'), at
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JCS string. s must be valid UTF-8 (callers
// sanitize with strings.ToValidUTF8 first); bytes are copied as they are.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// wireRecord is the decoding shape. Decoding goes through encoding/json and
// is then re-encoded: a line is accepted only if the re-encoding is
// byte-identical, which rejects every non-canonical spelling (whitespace, key
// order, duplicate or differently-cased keys, escapes, invalid UTF-8).
type wireRecord struct {
	ArgsSHA256   *string   `json:"args_sha256"`
	Attempt      *uint64   `json:"attempt"`
	Warnings     *[]string `json:"warnings"`
	Decision     *string   `json:"decision"`
	Hash         *string   `json:"hash"`
	LatencyUS    *uint64   `json:"latency_us"`
	Method       *string   `json:"method"`
	PrevHash     *string   `json:"prev_hash"`
	Principal    *string   `json:"principal"`
	Reason       *string   `json:"reason"`
	RequestID    *string   `json:"request_id"`
	ResultSHA256 *string   `json:"result_sha256"`
	Rule         *string   `json:"rule"`
	Seq          *uint64   `json:"seq"`
	Server       *string   `json:"server"`
	Tenant       *string   `json:"tenant"`
	Time         *string   `json:"time"`
	Tool         *string   `json:"tool"`
	TraceID      *string   `json:"trace_id"`
	V            *uint64   `json:"v"`
}

// errNotCanonical marks a line that parses but is not in canonical form.
var errNotCanonical = errors.New("not in canonical form")

// ParseRecord decodes one ledger line (without its trailing newline). It
// accepts only the canonical encoding and checks the shape of the hash
// fields, but not that Hash matches the content: that is Verify's job.
func ParseRecord(line []byte) (Record, error) {
	var w wireRecord
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return Record{}, fmt.Errorf("audit: record: %w", err)
	}
	if dec.More() {
		return Record{}, fmt.Errorf("audit: record: trailing data")
	}
	if w.ArgsSHA256 == nil || w.Decision == nil || w.Hash == nil || w.LatencyUS == nil || w.Method == nil ||
		w.PrevHash == nil || w.Principal == nil || w.Reason == nil || w.RequestID == nil || w.ResultSHA256 == nil ||
		w.Rule == nil || w.Seq == nil || w.Server == nil || w.Tenant == nil || w.Time == nil || w.Tool == nil || w.V == nil {
		return Record{}, fmt.Errorf("audit: record: missing field")
	}
	switch {
	case *w.V == 1 && (w.Attempt != nil || w.Warnings != nil || w.TraceID != nil):
		return Record{}, fmt.Errorf("audit: record: a version 1 record has no attempt, warnings or trace_id")
	case *w.V == 2 && w.TraceID != nil:
		return Record{}, fmt.Errorf("audit: record: a version 2 record has no trace_id")
	case *w.V >= 2 && *w.V <= 3 && (w.Attempt == nil || w.Warnings == nil):
		return Record{}, fmt.Errorf("audit: record: missing field")
	case *w.V == 3 && w.TraceID == nil:
		return Record{}, fmt.Errorf("audit: record: missing field")
	case *w.V < 1 || *w.V > 3:
		return Record{}, fmt.Errorf("audit: record: unknown format version %d", *w.V)
	}
	t, err := time.Parse(time.RFC3339Nano, *w.Time)
	if err != nil {
		return Record{}, fmt.Errorf("audit: record: time: %w", err)
	}
	r := Record{
		Seq: *w.Seq, Time: t.UTC(), Tenant: *w.Tenant, Principal: *w.Principal, RequestID: *w.RequestID,
		Method: *w.Method, Server: *w.Server, Tool: *w.Tool, Decision: Decision(*w.Decision), Rule: *w.Rule,
		Reason: *w.Reason, LatencyUS: *w.LatencyUS, ArgsSHA256: *w.ArgsSHA256, ResultSHA256: *w.ResultSHA256,
		PrevHash: *w.PrevHash, Hash: *w.Hash, Version: *w.V,
	}
	if *w.V >= 2 {
		r.Attempt, r.Warnings = *w.Attempt, *w.Warnings
	}
	if *w.V >= 3 {
		r.TraceID = *w.TraceID
		if r.TraceID != "" && !IsTraceID(r.TraceID) {
			return Record{}, fmt.Errorf("audit: record: trace_id must be empty or 32 lowercase hex digits")
		}
	}
	if !isHex64(r.Hash) || !isHex64(r.PrevHash) {
		return Record{}, fmt.Errorf("audit: record: hash and prev_hash must be 64 lowercase hex digits")
	}
	if (r.ArgsSHA256 != "" && !isHex64(r.ArgsSHA256)) || (r.ResultSHA256 != "" && !isHex64(r.ResultSHA256)) {
		return Record{}, fmt.Errorf("audit: record: args_sha256 and result_sha256 must be empty or 64 lowercase hex digits")
	}
	if !bytes.Equal(r.AppendCanonical(make([]byte, 0, len(line))), line) {
		return Record{}, fmt.Errorf("audit: record: %w", errNotCanonical)
	}
	return r, nil
}

func isHex64(s string) bool { return len(s) == 64 && isHex(s) }

// IsTraceID reports whether s is an OpenTelemetry trace id as a record
// carries it: 32 lowercase hex digits, not all zero (the invalid id).
func IsTraceID(s string) bool {
	return len(s) == 32 && isHex(s) && s != "00000000000000000000000000000000"
}

// isHex reports whether s is lowercase hex digits only.
func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Digest returns hex SHA-256 of b, or "" when b is empty: the form of
// ArgsSHA256 and ResultSHA256.
func Digest(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// clipAll clips each warning like a reason and keeps at most maxWarnings,
// marking the cut, so a hostile upstream cannot bloat a record with
// findings. It never returns nil (v2 records always carry the list).
func clipAll(ws []string) []string {
	out := make([]string, 0, min(len(ws), maxWarnings))
	for i, w := range ws {
		if i == maxWarnings-1 && len(ws) > maxWarnings {
			out = append(out, fmt.Sprintf("%d more warnings", len(ws)-i))
			break
		}
		out = append(out, clip.String(w, maxReason))
	}
	return out
}

// NewRequestID returns a fresh request id, "r-" and 24 hex digits: the id
// the gateway gives a governed request, so its records (its attempt and
// its outcome) and its log lines can be joined. Append mints one for an
// entry without.
//
// The id joins records; it guards nothing, so it comes from the runtime's
// per-thread ChaCha8 generator (seeded from the OS), not from crypto/rand,
// whose getrandom(2) was a syscall on every governed call: 96 random bits
// keep ids unique without it.
func NewRequestID() string {
	var raw [12]byte
	binary.BigEndian.PutUint32(raw[:4], rand.Uint32())
	binary.BigEndian.PutUint64(raw[4:], rand.Uint64())
	out := [26]byte{'r', '-'}
	hex.Encode(out[2:], raw[:])
	return string(out[:])
}
