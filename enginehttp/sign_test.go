package enginehttp

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"
)

const testSecret = "0123456789abcdef0123456789abcdef"

func testSecrets(t testing.TB) *Secrets {
	t.Helper()
	s, err := ParseSecrets([]byte("acme " + testSecret + "\nglobex " + testSecret + "-globex\n"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSignKnownAnswer pins Sign to vectors computed outside Go (Python's
// hmac module) from §14's definition.
func TestSignKnownAnswer(t *testing.T) {
	t.Parallel()
	cases := []struct{ body, want string }{
		{`{"idempotencyKey":"req-00000001"}`, "sha256=35504264ac5b5d15eab6dab7a1b204a05f8f2540005b222c9226fc5b0a990f31"},
		{"", "sha256=95059e215dd6dfb07686766b7229bb2ee0884228beefdc6295d87381076b1986"},
	}
	for _, tc := range cases {
		if got := Sign([]byte(testSecret), "1764720000000", "acme", []byte(tc.body)); got != tc.want {
			t.Errorf("Sign(body %q) = %s, want %s", tc.body, got, tc.want)
		}
	}
}

func signedHeader(secret, ts, inst, body string) http.Header {
	h := http.Header{}
	h.Set(HeaderInstallation, inst)
	h.Set(HeaderTimestamp, ts)
	h.Set(HeaderSignature, Sign([]byte(secret), ts, inst, []byte(body)))
	return h
}

func TestVerify(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1764720000000)
	ms := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).UnixMilli(), 10) }
	cases := []struct {
		name   string
		header func() http.Header
		body   string
		want   error
	}{
		{"Good", func() http.Header { return signedHeader(testSecret, ms(0), "acme", "{}") }, "{}", nil},
		{"EdgeOfWindowPast", func() http.Header { return signedHeader(testSecret, ms(-MaxSkew), "acme", "") }, "", nil},
		{"EdgeOfWindowFuture", func() http.Header { return signedHeader(testSecret, ms(MaxSkew), "acme", "") }, "", nil},
		{"JustStale", func() http.Header { return signedHeader(testSecret, ms(-MaxSkew-time.Millisecond), "acme", "") }, "", ErrStale},
		{"JustFuture", func() http.Header { return signedHeader(testSecret, ms(MaxSkew+time.Millisecond), "acme", "") }, "", ErrStale},
		{"SecondsNotMillis", func() http.Header {
			return signedHeader(testSecret, strconv.FormatInt(now.Unix(), 10), "acme", "")
		}, "", ErrStale},
		{"WrongSecret", func() http.Header { return signedHeader(testSecret+"x", ms(0), "acme", "{}") }, "{}", ErrBadSignature},
		{"OtherInstallationsSecret", func() http.Header { return signedHeader(testSecret+"-globex", ms(0), "acme", "") }, "", ErrBadSignature},
		{"UnknownInstallation", func() http.Header { return signedHeader(testSecret, ms(0), "initech", "") }, "", ErrBadSignature},
		{"BodyChanged", func() http.Header { return signedHeader(testSecret, ms(0), "acme", "{}") }, `{"a":1}`, ErrBadSignature},
		{"InstallationSwapped", func() http.Header {
			h := signedHeader(testSecret, ms(0), "acme", "")
			h.Set(HeaderInstallation, "globex")
			return h
		}, "", ErrBadSignature},
		{"NoSignature", func() http.Header {
			h := signedHeader(testSecret, ms(0), "acme", "")
			h.Del(HeaderSignature)
			return h
		}, "", ErrUnsigned},
		{"TwoTimestamps", func() http.Header {
			h := signedHeader(testSecret, ms(0), "acme", "")
			h.Add(HeaderTimestamp, ms(0))
			return h
		}, "", ErrUnsigned},
		{"NoPrefix", func() http.Header {
			h := signedHeader(testSecret, ms(0), "acme", "")
			h.Set(HeaderSignature, h.Get(HeaderSignature)[len(sigPrefix):])
			return h
		}, "", ErrUnsigned},
		{"ShortSignature", func() http.Header {
			h := signedHeader(testSecret, ms(0), "acme", "")
			h.Set(HeaderSignature, h.Get(HeaderSignature)[:40])
			return h
		}, "", ErrUnsigned},
		{"SignedTimestamp", func() http.Header { return signedHeader(testSecret, "+"+ms(0), "acme", "") }, "", ErrUnsigned},
		{"BadInstallationID", func() http.Header { return signedHeader(testSecret, ms(0), "ac me", "") }, "", ErrUnsigned},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := &Verifier{Secrets: func() *Secrets { return testSecrets(t) }, Now: func() time.Time { return now }}
			s, err := ParseHeaders(tc.header())
			if err == nil {
				_, err = v.Verify(s, []byte(tc.body))
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestVerifyReplay: a signature is accepted once, whatever the request it
// is replayed on (the body is "" for every GET and DELETE), while a fresh
// signature of the same installation is accepted.
func TestVerifyReplay(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1764720000000)
	v := &Verifier{Secrets: func() *Secrets { return testSecrets(t) }, Now: func() time.Time { return now }}
	verify := func(ts string) error {
		s, err := ParseHeaders(signedHeader(testSecret, ts, "acme", ""))
		if err != nil {
			return err
		}
		_, err = v.Verify(s, nil)
		return err
	}
	ts := strconv.FormatInt(now.UnixMilli(), 10)
	if err := verify(ts); err != nil {
		t.Fatal(err)
	}
	if err := verify(ts); !errors.Is(err, ErrReplayed) {
		t.Fatalf("replay: err = %v, want ErrReplayed", err)
	}
	if err := verify(strconv.FormatInt(now.UnixMilli()+1, 10)); err != nil {
		t.Fatalf("next millisecond: %v", err)
	}
}

// TestReplayCacheSweeps: entries past their expiry are dropped when the
// cache grows, so it stays bounded by the live window.
func TestReplayCacheSweeps(t *testing.T) {
	t.Parallel()
	var c replayCache
	if err := c.add("acme", []byte("live"), 1<<40, 0); err != nil {
		t.Fatal(err)
	}
	for i := range 5000 {
		sig := []byte(strconv.Itoa(i))
		if err := c.add("acme", sig, int64(i), int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(c.seen); n > 2100 {
		t.Fatalf("cache holds %d entries after 5000 short-lived adds; sweeps did not run", n)
	}
	// A live entry survives every sweep; an expired one may be used again
	// (its timestamp is stale by then, which Verify refuses first).
	if err := c.add("acme", []byte("live"), 1<<40, 5000); !errors.Is(err, ErrReplayed) {
		t.Fatalf("live entry: err = %v, want ErrReplayed", err)
	}
	if err := c.add("acme", []byte("10"), 6000, 5000); err != nil {
		t.Fatalf("expired entry: %v", err)
	}
}

// FuzzVerify: any header values and body are parsed and verified without
// panicking, and a request is accepted only if its signature is exactly
// Sign over what was sent.
func FuzzVerify(f *testing.F) {
	f.Add("acme", "1764720000000", Sign([]byte(testSecret), "1764720000000", "acme", []byte("{}")), []byte("{}"))
	f.Add("acme", "1764720000000", "sha256=", []byte(""))
	f.Add("", "", "", []byte(nil))
	f.Add("acme", "99999999999999999", "sha256=zz", []byte("x"))
	f.Add("acme\x00", "1764720000000", "SHA256=00", []byte("\xff"))
	f.Fuzz(func(t *testing.T, inst, ts, sig string, body []byte) {
		now := time.UnixMilli(1764720000000)
		secrets, _ := ParseSecrets([]byte("acme " + testSecret + "\n"))
		v := &Verifier{Secrets: func() *Secrets { return secrets }, Now: func() time.Time { return now }}
		h := http.Header{}
		h[HeaderInstallation] = []string{inst}
		h[HeaderTimestamp] = []string{ts}
		h[HeaderSignature] = []string{sig}
		s, err := ParseHeaders(h)
		if err != nil {
			return
		}
		got, err := v.Verify(s, body)
		if err != nil {
			return
		}
		if got != "acme" || inst != "acme" {
			t.Fatalf("accepted installation %q (header %q)", got, inst)
		}
		want := Sign([]byte(testSecret), ts, inst, body)
		if !equalFoldHex(sig, want) {
			t.Fatalf("accepted signature %q; the only valid one is %q", sig, want)
		}
	})
}

// equalFoldHex compares signatures ignoring the case of hex digits, which
// decode alike.
func equalFoldHex(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i]|0x20, b[i]|0x20
		if x != y {
			return false
		}
	}
	return true
}
