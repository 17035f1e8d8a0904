package rest

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bastion-mcp/bastion/api"
	"github.com/bastion-mcp/bastion/design"
	"github.com/bastion-mcp/bastion/fault"
	"github.com/bastion-mcp/bastion/review"
	"github.com/bastion-mcp/bastion/reviewmcp"
)

// openAPIDoc is the part of an OpenAPI 3.1 document the tests read.
type openAPIDoc struct {
	OpenAPI    string                                `json:"openapi"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Parameters map[string]openAPIParam    `json:"parameters"`
		Schemas    map[string]openAPISchema   `json:"schemas"`
		Responses  map[string]json.RawMessage `json:"responses"`
	} `json:"components"`
}

type openAPIParam struct {
	Ref      string `json:"$ref"`
	Name     string `json:"name"`
	In       string `json:"in"`
	Required bool   `json:"required"`
}

type openAPISchema struct {
	Properties map[string]openAPISchema `json:"properties"`
	Required   []string                 `json:"required"`
}

type openAPIOp struct {
	Parameters  []openAPIParam             `json:"parameters"`
	RequestBody *struct{ Required bool }   `json:"requestBody"`
	Responses   map[string]json.RawMessage `json:"responses"`
	Security    []map[string][]string      `json:"security"`
}

func loadOpenAPI(t *testing.T) *openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	if err := json.Unmarshal(api.OpenAPI(), &doc); err != nil {
		t.Fatalf("api/openapi.json: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	return &doc
}

// httpMethods are the operation keys of an OpenAPI path item.
var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// faultCodes parses fault/fault.go for every Code constant, so a code added
// there without a row in statusFor fails TestStatusTable.
func faultCodes(t *testing.T) []fault.Code {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../fault/fault.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []fault.Code
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for _, v := range vs.Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok {
					t.Fatalf("fault.go: a Code constant is not a string literal")
				}
				s, _ := strconv.Unquote(lit.Value)
				codes = append(codes, fault.Code(s))
			}
		}
	}
	if len(codes) < 20 {
		t.Fatalf("parsed only %d codes from fault.go", len(codes))
	}
	return codes
}

func restCodes() []fault.Code {
	return []fault.Code{CodeNotFound, CodeMethodNotAllowed, CodeUnsupportedMediaType, CodeRequestTooLarge}
}

// errorStatuses is every status an error answer can have: the status table's
// and the authentication layer's (auth.Status: 400, 401, 403, 503).
func errorStatuses(t *testing.T) map[int]bool {
	set := map[int]bool{400: true, 401: true, 403: true, 503: true}
	for _, c := range append(faultCodes(t), restCodes()...) {
		st, _ := statusFor(c)
		set[st] = true
	}
	return set
}

func TestStatusTable(t *testing.T) {
	t.Parallel()
	for _, c := range append(faultCodes(t), restCodes()...) {
		st, ok := statusFor(c)
		if !ok {
			t.Errorf("statusFor(%s) has no row", c)
		}
		if st < 400 || st > 599 {
			t.Errorf("statusFor(%s) = %d, not an error status", c, st)
		}
	}
	// The mappings the wire contract fixes.
	for c, want := range map[fault.Code]int{
		fault.InvalidArgument: 400, fault.AuthRequired: 401, fault.InsufficientScope: 403,
		fault.JobNotFound: 404, fault.FindingNotFound: 404, fault.IdempotencyConflict: 409, fault.JobExpired: 410,
		fault.RateLimited: 429, fault.BudgetExhausted: 429, fault.URLNotAllowed: 422, fault.DNSTargetProhibited: 422,
		fault.DomainUnverified: 422, fault.ReviewNotReady: 409, fault.InternalError: 500, fault.Unavailable: 503,
		CodeUnsupportedMediaType: 415, CodeRequestTooLarge: 413, CodeMethodNotAllowed: 405, CodeNotFound: 404,
	} {
		if got, _ := statusFor(c); got != want {
			t.Errorf("statusFor(%s) = %d, want %d", c, got, want)
		}
	}
	if got, ok := statusFor("NO_SUCH_CODE"); ok || got != 500 {
		t.Errorf("statusFor(unknown) = %d, %v; want 500, false", got, ok)
	}
}

var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

// TestOpenAPIMatchesRoutes holds api/openapi.json to the route table: the
// same paths and methods, the same path parameters, the scope each route
// names, its body requirement, and only statuses the handler can produce.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	errs := errorStatuses(t)

	documented := map[string]openAPIOp{}
	for path, item := range doc.Paths {
		for k, raw := range item {
			if !slices.Contains(httpMethods, k) {
				continue
			}
			var op openAPIOp
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", k, path, err)
			}
			documented[strings.ToUpper(k)+" "+path] = op
		}
	}
	served := map[string]route{}
	for _, rt := range routes() {
		served[rt.method+" "+rt.pattern] = rt
	}
	if got, want := slices.Sorted(maps.Keys(documented)), slices.Sorted(maps.Keys(served)); !slices.Equal(got, want) {
		t.Fatalf("documented routes\n\t%q\nserved routes\n\t%q", got, want)
	}

	for key, rt := range served {
		op := documented[key]
		// Path parameters, resolving $refs.
		var params []string
		for _, p := range op.Parameters {
			if p.Ref != "" {
				p = doc.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
			}
			if p.Name == "" {
				t.Errorf("%s: unresolved parameter", key)
			}
			if p.In == "path" {
				if !p.Required {
					t.Errorf("%s: path parameter %s not required", key, p.Name)
				}
				params = append(params, p.Name)
			}
		}
		var want []string
		for _, m := range pathParam.FindAllStringSubmatch(rt.pattern, -1) {
			want = append(want, m[1])
		}
		slices.Sort(params)
		slices.Sort(want)
		if !slices.Equal(params, want) {
			t.Errorf("%s: documented path parameters %q, pattern has %q", key, params, want)
		}

		// Security names the route's scope.
		if len(op.Security) != 1 || !slices.Equal(op.Security[0]["bearer"], []string{string(rt.scope)}) {
			t.Errorf("%s: security = %v, want bearer [%s]", key, op.Security, rt.scope)
		}

		// A required body is documented as required; an optional one as not.
		if rt.body != (op.RequestBody != nil && op.RequestBody.Required) {
			t.Errorf("%s: body required = %v, but the OpenAPI requestBody says otherwise", key, rt.body)
		}

		// Responses: the success status, the errors every route can answer,
		// and nothing the handler cannot produce.
		if _, ok := op.Responses[strconv.Itoa(rt.success)]; !ok {
			t.Errorf("%s: success status %d not documented", key, rt.success)
		}
		for _, st := range []int{400, 401, 403, 500} {
			if _, ok := op.Responses[strconv.Itoa(st)]; !ok {
				t.Errorf("%s: status %d not documented", key, st)
			}
		}
		for code, raw := range op.Responses {
			st, err := strconv.Atoi(code)
			if err != nil {
				t.Errorf("%s: response %q is not a status code", key, code)
				continue
			}
			if st != rt.success && !errs[st] {
				t.Errorf("%s: documents %d, which the handler never produces", key, st)
			}
			if st >= 400 {
				var ref struct {
					Ref string `json:"$ref"`
				}
				_ = json.Unmarshal(raw, &ref)
				name := strings.TrimPrefix(ref.Ref, "#/components/responses/")
				if _, ok := doc.Components.Responses[name]; !ok || name != "E"+code {
					t.Errorf("%s: %d refers to %q, want #/components/responses/E%s", key, st, ref.Ref, code)
				}
			}
		}
	}
}

// TestOpenAPISchemasMatchWireTypes checks each documented schema's
// properties against the JSON fields of the Go type the handler encodes or
// decodes, so a field added to either side fails here.
func TestOpenAPISchemasMatchWireTypes(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	types := map[string]any{
		"SubmitRequest":      review.SubmitParams{},
		"SubmitResult":       review.SubmitResult{},
		"Job":                review.Job{},
		"JobError":           review.JobError{},
		"Budget":             review.Budget{},
		"GetResult":          getResponse{},
		"Review":             reviewWire{},
		"Finding":            findingWire{},
		"Box":                boxWire{},
		"Provenance":         field(reviewWire{}, "Provenance"),
		"Coverage":           field(reviewWire{}, "Coverage"),
		"Skip":               design.Skip{},
		"Measurements":       field(reviewWire{}, "Measurements"),
		"Violation":          field(reviewWire{}, "Measurements", "Violations"),
		"PageHealth":         field(reviewWire{}, "PageHealth"),
		"Overview":           field(reviewWire{}, "Overviews"),
		"Failure":            design.Failure{},
		"Evidence":           evidence{},
		"RecheckRequest":     recheckBody{},
		"RecheckResult":      recheckResponse{},
		"RecheckReport":      reviewmcp.Recheck{},
		"RecheckOutcome":     field(reviewmcp.Recheck{}, "Outcomes"),
		"CancelRequest":      cancelBody{},
		"CancelResult":       review.CancelResult{},
		"PanelActionRequest": panelBody{},
		"PanelResponse":      review.PanelResponse{},
		"PanelActionResult":  review.PanelActionResult{},
		"FeedbackRequest":    feedbackBody{},
		"FeedbackResult":     review.FeedbackResult{},
		"TargetAddRequest":   targetAddBody{},
		"Challenge":          challengeJSON{},
		"Target":             targetJSON{},
		"TargetList":         targetList{},
		"Error":              envelope{},
		"Facts":              design.Facts{},
		"Summary":            reviewmcp.Summary{},
	}
	check := func(name string, s openAPISchema, typ reflect.Type) {
		if typ.Kind() == reflect.Map {
			return // Facts: a map, documented by additionalProperties
		}
		got := slices.Sorted(maps.Keys(s.Properties))
		want := jsonFields(typ)
		if !slices.Equal(got, want) {
			t.Errorf("schema %s has properties %q; %s encodes %q", name, got, typ, want)
		}
		for _, r := range s.Required {
			if _, ok := s.Properties[r]; !ok {
				t.Errorf("schema %s requires undeclared %q", name, r)
			}
		}
	}
	for name, v := range types {
		s, ok := doc.Components.Schemas[name]
		if !ok {
			t.Errorf("schema %s missing", name)
			continue
		}
		typ, ok := v.(reflect.Type)
		if !ok {
			typ = reflect.TypeOf(v)
		}
		check(name, s, typ)
	}
	check("Error.error", doc.Components.Schemas["Error"].Properties["error"], reflect.TypeOf(errorBody{}))
	for name := range doc.Components.Schemas {
		if _, ok := types[name]; !ok && name != "OAuthError" {
			t.Errorf("schema %s is not checked against a Go type", name)
		}
	}
}

// field is the element type of the Go field path names under v's type
// (through pointers, slices and embedded structs), for wire types that have
// no name of their own outside their package.
func field(v any, path ...string) reflect.Type {
	t := reflect.TypeOf(v)
	for _, name := range path {
		f, ok := deref(t).FieldByName(name)
		if !ok {
			panic("no field " + name + " in " + t.String())
		}
		t = f.Type
	}
	return deref(t)
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	return t
}

// jsonFields lists the JSON member names encoding/json gives t's fields,
// sorted, following untagged embedded structs.
func jsonFields(t reflect.Type) []string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestRoutesAreServed proves the route table is what the mux serves: every
// route answers (401 without a principal), never 404 or 405.
func TestRoutesAreServed(t *testing.T) {
	t.Parallel()
	h := NewHandler(nil, nil, Options{})
	for _, rt := range routes() {
		path := pathParam.ReplaceAllString(rt.pattern, "x12345678")
		req, _ := http.NewRequest(rt.method, "http://bastion.test"+path, nil)
		rec := &recorder{headerRecorder: headerRecorder{h: http.Header{}}}
		h.ServeHTTP(rec, req)
		if rec.status != http.StatusUnauthorized {
			t.Errorf("%s %s = %d, want 401", rt.method, path, rec.status)
		}
	}
}

type recorder struct {
	headerRecorder
	body []byte
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	r.body = append(r.body, b...)
	return len(b), nil
}
