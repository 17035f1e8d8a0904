package reviewmcp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/fault"
)

// FuzzValidate holds the two validation layers to one verdict: the walker
// that names the field rejects exactly what jsonschema-go rejects, for
// every tool, and a rejection is always a typed INVALID_ARGUMENT.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{
		`{}`, `null`, `[]`, `"x"`, `{"url":"https://a.example/","client_request_id":"key-0001"}`,
		`{"url":"https://a.example/","client_request_id":"key-0001","routes":["/","/b"],"viewports":["mobile"],"depth":"deep"}`,
		`{"url":"http://a/","client_request_id":"k"}`, `{"routes":[1,"/"]}`, `{"bogus":true}`,
		`{"job_id":"job_12345678","view":"focus"}`, `{"job_id":"job_12345678","action":"apply_fix","finding_id":"f_001"}`,
		`{"review_id":"rev_12345678","finding_ids":["f_001"],"client_request_id":"key-0001","expected_revision":"v2"}`,
		`{"job_id":"job_12345678","reason":""}`, `{"url":"https://\u00e9.example/","client_request_id":"key:0001.a_b-c"}`,
		`{"job_id":1e3}`, `{"finding_ids":[[]]}`, `{"a":{"b":[null]}}`,
	} {
		f.Add(s)
	}
	cat, err := loadCatalog()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		inst, err := parseArguments(json.RawMessage(raw))
		for name, ts := range cat.tools {
			verr := ts.validate(json.RawMessage(raw))
			if err != nil {
				if !fault.Is(verr, fault.InvalidArgument) {
					t.Fatalf("%s: unparseable %q gave %v", name, raw, verr)
				}
				continue
			}
			walker := ts.walk.check("", ts.in, inst)
			lib := ts.resolved.Validate(inst)
			if (walker == "") != (lib == nil) {
				t.Fatalf("%s: walker %q, jsonschema-go %v, on %q", name, walker, lib, raw)
			}
			if (verr == nil) != (lib == nil) || (verr != nil && !fault.Is(verr, fault.InvalidArgument)) {
				t.Fatalf("%s: validate %v, jsonschema-go %v", name, verr, lib)
			}
		}
	})
}

func TestEnvelopeRendersEveryField(t *testing.T) {
	t.Parallel()
	e := fault.New(fault.RateLimited, "too many rechecks submitted; slow down and retry in ~2s").WithRetryAfter(1997 * time.Millisecond)
	res := envelopeResult(envelopeOf(e))
	if !res.IsError {
		t.Fatal("isError false")
	}
	var sc struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal(res.StructuredContent.(json.RawMessage), &sc); err != nil {
		t.Fatal(err)
	}
	got := sc.Error
	if got["code"] != "RATE_LIMITED" || got["retriable"] != true || got["next_action"] != "wait" || got["retry_after_ms"] != 1997.0 ||
		got["schema_version"] != "1.0.0" || !strings.HasPrefix(got["correlation_id"].(string), "cor_") || len(got) != 7 {
		t.Errorf("envelope %v", got)
	}
	// The cause is for logs only.
	w := fault.Wrap(errSecret{}, fault.InternalError, "the review could not be retrieved")
	b, _ := json.Marshal(envelopeOf(w))
	if strings.Contains(string(b), "10.0.0.7") {
		t.Errorf("envelope leaks the cause: %s", b)
	}
}

type errSecret struct{}

func (errSecret) Error() string { return "dial tcp 10.0.0.7:5432: connection refused" }
