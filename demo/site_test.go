package demo

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// pinnedClient trusts only the certificate whose SPKI hashes to spki, as
// Chromium's --ignore-certificate-errors-spki-list does, and dials addr for
// every host.
func pinnedClient(spki, addr string) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{
			ServerName:         Host,
			InsecureSkipVerify: true, // replaced by the SPKI pin below
			VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
				c, err := x509.ParseCertificate(raw[0])
				if err != nil {
					return err
				}
				sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
				if base64.StdEncoding.EncodeToString(sum[:]) != spki || c.VerifyHostname(Host) != nil {
					return errors.New("certificate does not match the pin")
				}
				return nil
			},
		},
	}}
}

func get(t *testing.T, c *http.Client, addr, path string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "https://"+addr+path, nil)
	req.Host = Host
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), res.Header
}

func TestSite(t *testing.T) {
	t.Parallel()
	s, err := StartSite(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	addr := s.Addr().String()
	if !s.Addr().Addr().IsLoopback() {
		t.Fatalf("site listens on %s; want loopback", addr)
	}
	c := pinnedClient(s.SPKIHash(), addr)

	code, body, h := get(t, c, addr, "/pricing")
	if code != 200 || !strings.Contains(body, `content="`+Revision1+`"`) || h.Get("X-Revision") != Revision1 {
		t.Fatalf("revision 1 /pricing: %d %s", code, h.Get("X-Revision"))
	}
	if !strings.Contains(body, `<button class="menu-btn" type="button"><svg`) {
		t.Error("revision 1 lost its seeded unnamed icon button")
	}
	code, css, _ := get(t, c, addr, "/assets/site.css")
	if code != 200 || !strings.Contains(css, ".plan-note { color: #9ca3af; }") {
		t.Errorf("revision 1 css: %d", code)
	}
	if code, _, _ := get(t, c, addr, "/.env"); code != 404 {
		t.Errorf("/.env = %d; want 404", code)
	}

	if err := s.SetRevision(2); err != nil {
		t.Fatal(err)
	}
	_, body, h = get(t, c, addr, "/pricing")
	if h.Get("X-Revision") != Revision2 || !strings.Contains(body, `aria-label="Open menu"`) {
		t.Errorf("revision 2 /pricing: %s", h.Get("X-Revision"))
	}
	_, css, _ = get(t, c, addr, "/assets/site.css")
	// Revision 2 fixes some defects and keeps others for the recheck to find.
	if strings.Contains(css, "#9ca3af") || !strings.Contains(css, "#e11d48") || !strings.Contains(css, "min-width: 720px") {
		t.Error("revision 2 css does not fix exactly the intended defects")
	}
	if err := s.SetRevision(3); err == nil {
		t.Error("SetRevision(3) succeeded")
	}

	// Another key's pin is refused: the browser trusts this one cert only.
	other, err := StartSite(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if other.SPKIHash() == s.SPKIHash() {
		t.Fatal("two sites share a key")
	}
	req, _ := http.NewRequest(http.MethodGet, "https://"+other.Addr().String()+"/pricing", nil)
	if res, err := c.Do(req); err == nil {
		res.Body.Close()
		t.Error("a certificate with another SPKI was accepted")
	}
}
