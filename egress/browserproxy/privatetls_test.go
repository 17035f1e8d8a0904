package browserproxy_test

import (
	"context"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/egress/browserproxy"
	"github.com/bastion-mcp/bastion/internal/testenv"
)

// TestChromiumPrivateTLS loads two https pages served with the same
// self-signed certificate, in a real Chromium that trusts the proxy's
// PrivateTLSSPKI: the one on a loopback address loads (the proxy accepts a
// development server's certificate there), the one on a name that resolves
// to a public address fails with a certificate error (the proxy only
// tunnels, and the browser judges the certificate as always).
func TestChromiumPrivateTLS(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html><title>dev-ok</title>`)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	publicAddr := net.JoinHostPort(siteName, strconv.Itoa(port))
	g := egress.NewGuard(egress.Policy{AllowPrivate: true, Ports: []uint16{443, uint16(port)}},
		egress.StaticResolver{siteName: {sitePublicIP}})
	tg := &testGuard{Guard: g, redirect: map[string]string{publicAddr: srv.Listener.Addr().String()}}
	p, err := browserproxy.New(tg, browserproxy.Options{PrivateTLS: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if p.PrivateTLSSPKI() == "" {
		t.Fatal("PrivateTLSSPKI is empty with Options.PrivateTLS")
	}
	s := p.NewSession()
	defer s.Close()

	flags := append(browserproxy.ChromiumFlags(s.Addr()), "--ignore-certificate-errors-spki-list="+p.PrivateTLSSPKI())
	opts := allocatorOptions(t, flags)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second) // a cap for loaded CI machines
	defer cancel()
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	cctx, ccancel := chromedp.NewContext(actx)
	defer ccancel()

	loopback := "https://127.0.0.1:" + strconv.Itoa(port) + "/"
	var title string
	err = chromedp.Do(cctx, chromedp.Navigate(loopback))
	if err == nil {
		title, err = chromedp.Run(cctx, chromedp.Title())
	}
	if err != nil || title != "dev-ok" {
		t.Errorf("loopback https with a self-signed certificate: title %q, %v; want the page", title, err)
	}
	err = chromedp.Do(cctx, chromedp.Navigate("https://"+publicAddr+"/"))
	if err == nil || !strings.Contains(err.Error(), "ERR_CERT") {
		t.Errorf("public host with a self-signed certificate: %v, want a certificate error", err)
	}
}
