package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/principal"
)

func TestParseBearer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    string
		wantErr error
	}{
		{"Bearer abc.def-ghi_jkl~mno+pqr/stu", "abc.def-ghi_jkl~mno+pqr/stu", nil},
		{"bearer abc", "abc", nil},
		{"BEARER abc", "abc", nil},
		{"Bearer abc==", "abc==", nil},
		// A malformed credential is an invalid token (401), never a 400.
		{"Bearer  abc", "", ErrInvalidToken},
		{"Bearer", "", ErrNoToken},
		{"Bearer ", "", ErrNoToken},
		{"Bearer abc def", "", ErrInvalidToken},
		{"Bearer a=b", "", ErrInvalidToken},
		{"Bearer =", "", ErrInvalidToken},
		{"Bearer eyJh=.eyJz=.c2ln", "", ErrInvalidToken}, // padded base64 segments
		{"Bearer abc\x00", "", ErrInvalidToken},
		{"Bearer " + strings.Repeat("a", maxHeaderToken+1), "", ErrInvalidToken},
		{"Basic dXNlcjpwYXNz", "", ErrNoToken},
		{"Bearerabc", "", ErrNoToken},
		{"Bearer\tabc", "", ErrNoToken},
		{"", "", ErrNoToken},
		{"DPoP abc", "", ErrNoToken},
	}
	for _, tt := range tests {
		got, err := ParseBearer(tt.in)
		if got != tt.want || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
			t.Errorf("ParseBearer(%.40q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestBearerTokenRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		url     string
		headers []string
		want    string
		wantErr error
	}{
		{"One", "/mcp", []string{"Bearer tok"}, "tok", nil},
		{"None", "/mcp", nil, "", ErrNoToken},
		{"Two", "/mcp", []string{"Bearer tok", "Bearer tok"}, "", ErrInvalidRequest},
		{"TwoDifferent", "/mcp", []string{"Bearer low", "Bearer high"}, "", ErrInvalidRequest},
		// The query form is never read (RFC 6750 §2.3): alone it is no
		// token, beside a header it is ignored.
		{"QueryOnly", "/mcp?access_token=tok", nil, "", ErrNoToken},
		{"QueryAndHeader", "/mcp?access_token=other", []string{"Bearer tok"}, "tok", nil},
		{"QueryEmpty", "/mcp?access_token=", []string{"Bearer tok"}, "tok", nil},
		{"OtherQuery", "/mcp?token=x", []string{"Bearer tok"}, "tok", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, tt.url, nil)
			for _, h := range tt.headers {
				r.Header.Add("Authorization", h)
			}
			got, err := BearerToken(r)
			if got != tt.want || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("BearerToken = %q, %v; want %q, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

const testMetadataURL = "https://bastion.example.test/.well-known/oauth-protected-resource/mcp"

func TestChallenge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		err        error
		status     int
		header     string
		body       string
		retryAfter string
	}{
		{
			name:   "NoToken",
			err:    ErrNoToken,
			status: 401,
			header: `Bearer resource_metadata="` + testMetadataURL + `"`,
			body:   `{"error_description":"An access token is required."}`,
		},
		{
			name:   "Expired",
			err:    fmt.Errorf("wrapped: %w", invalid(ReasonExpired)),
			status: 401,
			header: `Bearer resource_metadata="` + testMetadataURL + `", error="invalid_token", error_description="The access token expired."`,
			body:   `{"error":"invalid_token","error_description":"The access token expired."}`,
		},
		{
			name:   "BareInvalid",
			err:    ErrInvalidToken,
			status: 401,
			header: `Bearer resource_metadata="` + testMetadataURL + `", error="invalid_token", error_description="The access token is invalid."`,
			body:   `{"error":"invalid_token","error_description":"The access token is invalid."}`,
		},
		{
			name:   "InvalidRequest",
			err:    ErrInvalidRequest,
			status: 400,
			header: `Bearer resource_metadata="` + testMetadataURL + `", error="invalid_request", error_description="Send the access token in a single Authorization: Bearer header."`,
			body:   `{"error":"invalid_request","error_description":"Send the access token in a single Authorization: Bearer header."}`,
		},
		{
			name:   "InsufficientScope",
			err:    &InsufficientScopeError{Required: []principal.Scope{principal.ReviewsWrite}},
			status: 403,
			header: `Bearer resource_metadata="` + testMetadataURL + `", error="insufficient_scope", scope="reviews:write"`,
			body:   `{"error":"insufficient_scope","error_description":"The access token lacks a scope this operation requires.","scope":"reviews:write"}`,
		},
		{
			name:   "InsufficientScopeTwo",
			err:    &InsufficientScopeError{Required: []principal.Scope{principal.ReviewsRead, principal.ReviewsCancel}},
			status: 403,
			header: `Bearer resource_metadata="` + testMetadataURL + `", error="insufficient_scope", scope="reviews:read reviews:cancel"`,
			body:   `{"error":"insufficient_scope","error_description":"The access token lacks a scope this operation requires.","scope":"reviews:read reviews:cancel"}`,
		},
		{
			name:       "Unavailable",
			err:        fmt.Errorf("%w: dial tcp 10.0.0.7:443: refused", ErrUnavailable),
			status:     503,
			retryAfter: "5",
			body:       `{"error":"temporarily_unavailable","error_description":"Credentials cannot be checked right now; retry shortly."}`,
		},
		{
			name:   "Unknown",
			err:    errors.New("db at 10.0.0.7 exploded"),
			status: 500,
			body:   `{"error":"server_error","error_description":"The credentials could not be checked."}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			Challenge(w, testMetadataURL, tt.err)
			if w.Code != tt.status || Status(tt.err) != tt.status {
				t.Errorf("status = %d (Status %d), want %d", w.Code, Status(tt.err), tt.status)
			}
			if got := w.Header().Get("WWW-Authenticate"); got != tt.header {
				t.Errorf("WWW-Authenticate =\n  %s\nwant\n  %s", got, tt.header)
			}
			if got := w.Header().Get("Retry-After"); got != tt.retryAfter {
				t.Errorf("Retry-After = %q, want %q", got, tt.retryAfter)
			}
			if got := strings.TrimSpace(w.Body.String()); got != tt.body {
				t.Errorf("body =\n  %s\nwant\n  %s", got, tt.body)
			}
			if strings.Contains(w.Body.String(), "10.0.0.7") {
				t.Error("challenge leaks an internal address")
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
		})
	}
	// A metadata URL carrying a quote cannot break out of the parameter.
	w := httptest.NewRecorder()
	Challenge(w, "https://x/\"a\\b\r\n", ErrNoToken)
	if got, want := w.Header().Get("WWW-Authenticate"), `Bearer resource_metadata="https://x/\"a\\b"`; got != want {
		t.Errorf("quoted = %s, want %s", got, want)
	}
}

func TestCheckScopes(t *testing.T) {
	t.Parallel()
	p, err := principal.New("acme", "u", principal.ReviewsRead)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckScopes(p, principal.ReviewsRead); err != nil {
		t.Errorf("CheckScopes(read) = %v", err)
	}
	err = CheckScopes(p, principal.ReviewsRead, principal.ReviewsWrite)
	var ise *InsufficientScopeError
	if !errors.As(err, &ise) || len(ise.Required) != 2 {
		t.Errorf("CheckScopes(read, write) = %v, want both required listed", err)
	}
	if err := CheckScopes(principal.Principal{}); !errors.Is(err, ErrNoToken) {
		t.Errorf("CheckScopes(zero) = %v, want ErrNoToken", err)
	}
	if err := RequireScope(context.Background(), principal.ReviewsRead); !errors.Is(err, ErrNoToken) {
		t.Errorf("RequireScope(no principal) = %v, want ErrNoToken", err)
	}
}

// TestMiddlewareOverHTTP runs the whole chain on a real loopback listener:
// JWTs from the test issuer, PATs from a store, step-up on a write route.
func TestMiddlewareOverHTTP(t *testing.T) {
	t.Parallel()
	is := newIssuer(t, key("ec256"))
	jv, clk := is.verifier(nil)
	store := newMemStore()
	issuer := NewPATIssuer(store, nil, clk.Now)
	ctx := context.Background()
	readPAT, _, err := issuer.Create(ctx, "acme", "ci", []principal.Scope{principal.ReviewsRead}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	v := Combined(PATVerifier(store, clk.Now), jv.Verify)

	mux := http.NewServeMux()
	who := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := principal.FromContext(r.Context())
		if !ok {
			t.Error("handler reached without a principal")
		}
		fmt.Fprint(w, p.String())
	})
	mux.Handle("GET /who", who)
	mux.Handle("POST /write", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := RequireScope(r.Context(), principal.ReviewsWrite); err != nil {
			Challenge(w, testMetadataURL, err)
			return
		}
		who.ServeHTTP(w, r)
	}))
	srv := httptest.NewServer(Middleware(v, testMetadataURL)(mux))
	t.Cleanup(srv.Close)

	readJWT := func() string {
		c := claims()
		c["scope"] = "reviews:read"
		return is.sign(key("ec256"), c, nil)
	}()
	writeJWT := is.sign(key("ec256"), claims(), nil)
	expired := func() string {
		c := claims()
		c["exp"] = t0.Add(-time.Hour).Unix()
		return is.sign(key("ec256"), c, nil)
	}()

	tests := []struct {
		name       string
		method     string
		path       string
		auth       []string
		extra      map[string]string
		wantStatus int
		wantBody   string
		wantChal   string
	}{
		{"JWT", "GET", "/who", []string{"Bearer " + readJWT}, nil, 200, "acme/user-42", ""},
		{"PAT", "GET", "/who", []string{"Bearer " + readPAT}, nil, 200, "acme/pat:", ""},
		{"LowerCaseScheme", "GET", "/who", []string{"bearer " + readJWT}, nil, 200, "acme/user-42", ""},
		{"NoToken", "GET", "/who", nil, nil, 401, "", `Bearer resource_metadata="` + testMetadataURL + `"`},
		{"Expired", "GET", "/who", []string{"Bearer " + expired}, nil, 401, "", `Bearer resource_metadata="` + testMetadataURL + `", error="invalid_token", error_description="The access token expired."`},
		{"QueryToken", "GET", "/who?access_token=" + readJWT, nil, nil, 401, "", `Bearer resource_metadata="` + testMetadataURL + `"`},
		{"QueryTokenCannotStepUp", "POST", "/write?access_token=" + writeJWT, []string{"Bearer " + readJWT}, nil, 403, "", `Bearer resource_metadata="` + testMetadataURL + `", error="insufficient_scope", scope="reviews:write"`},
		{"PaddedToken", "GET", "/who", []string{"Bearer " + paddedAll(readJWT)}, nil, 401, "", `Bearer resource_metadata="` + testMetadataURL + `", error="invalid_token", error_description="The access token is malformed."`},
		{"PaddedSignature", "GET", "/who", []string{"Bearer " + readJWT + "=="}, nil, 401, "", `Bearer resource_metadata="` + testMetadataURL + `", error="invalid_token", error_description="The access token is malformed."`},
		{"TwoHeaders", "GET", "/who", []string{"Bearer " + readJWT, "Bearer " + writeJWT}, nil, 400, "", ""},
		{"StepUp", "POST", "/write", []string{"Bearer " + readJWT}, nil, 403, "", `Bearer resource_metadata="` + testMetadataURL + `", error="insufficient_scope", scope="reviews:write"`},
		{"PATStepUp", "POST", "/write", []string{"Bearer " + readPAT}, nil, 403, "", ""},
		{"WriteAllowed", "POST", "/write", []string{"Bearer " + writeJWT}, nil, 200, "acme/user-42", ""},
		// Identity smuggled beside a low-privilege token gains nothing.
		{"SmuggledHeaders", "POST", "/write", []string{"Bearer " + readJWT}, map[string]string{"X-Forwarded-User": "admin", "X-Tenant-ID": "other", "X-Scope": "reviews:write"}, 403, "", ""},
		{"TamperedPAT", "GET", "/who", []string{"Bearer " + readPAT[:10] + flip(readPAT[10]) + readPAT[11:]}, nil, 401, "", `Bearer resource_metadata="` + testMetadataURL + `", error="invalid_token", error_description="The access token is malformed."`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range tt.auth {
				req.Header.Add("Authorization", a)
			}
			for k, v := range tt.extra {
				req.Header.Set(k, v)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d (body %s)", resp.StatusCode, tt.wantStatus, body)
			}
			if tt.wantBody != "" && !strings.HasPrefix(string(body), tt.wantBody) {
				t.Errorf("body = %q, want prefix %q", body, tt.wantBody)
			}
			if tt.wantChal != "" {
				if got := resp.Header.Get("WWW-Authenticate"); got != tt.wantChal {
					t.Errorf("WWW-Authenticate =\n  %s\nwant\n  %s", got, tt.wantChal)
				}
			}
			if resp.StatusCode >= 400 {
				var m map[string]string
				if err := json.Unmarshal(body, &m); err != nil {
					t.Errorf("refusal body %q is not JSON: %v", body, err)
				}
				for _, a := range tt.auth {
					if tok := strings.TrimPrefix(a, "Bearer "); strings.Contains(string(body), tok[:12]) {
						t.Error("refusal body echoes the token")
					}
				}
			}
		})
	}
}

func flip(c byte) string {
	if c == 'a' {
		return "b"
	}
	return "a"
}

// TestMiddlewareZeroPrincipal: a verifier that returns no error and no
// principal must not let the request through as nobody.
func TestMiddlewareZeroPrincipal(t *testing.T) {
	t.Parallel()
	sloppy := Verifier(func(context.Context, string, *http.Request) (principal.Principal, error) {
		return principal.Principal{}, nil
	})
	reached := false
	h := Middleware(sloppy, testMetadataURL)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer x")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if reached || w.Code != 401 {
		t.Errorf("zero principal: reached=%v status=%d, want refused 401", reached, w.Code)
	}
}

func TestCombinedRouting(t *testing.T) {
	t.Parallel()
	mark := func(id string) Verifier {
		return func(context.Context, string, *http.Request) (principal.Principal, error) {
			return principal.New("t", id)
		}
	}
	v := Combined(mark("pat"), mark("jwt"))
	ctx := context.Background()
	if p, _ := v(ctx, "bst_x", nil); p.ID() != "pat" {
		t.Errorf("bst_ token went to %q", p.ID())
	}
	if p, _ := v(ctx, "eyJ.x.y", nil); p.ID() != "jwt" {
		t.Errorf("JWT went to %q", p.ID())
	}
	if _, err := Combined(mark("pat"), nil)(ctx, "eyJ.x.y", nil); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("JWT with no JWT verifier = %v, want ErrInvalidToken", err)
	}
}

// paddedAll re-encodes each segment of a compact JWS with base64 padding,
// as a careless client might.
func paddedAll(tok string) string {
	parts := strings.Split(tok, ".")
	for i, p := range parts {
		if n := len(p) % 4; n != 0 {
			parts[i] = p + strings.Repeat("=", 4-n)
		}
	}
	return strings.Join(parts, ".")
}
