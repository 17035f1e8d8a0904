// Package enginetest is a client of the engine job API written from the
// protocol alone (the peer contract's §14), not from enginehttp: it signs
// with its own HMAC, so a test driving the server through it checks the
// server against the protocol rather than against itself.
package enginetest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Client signs and sends requests as one installation.
type Client struct {
	T            testing.TB
	Base         string // the server's base URL, no trailing slash
	Installation string
	Secret       string
	Skew         time.Duration // added to the timestamp, to test the window

	last int64 // the last timestamp sent
}

// Do signs and sends method path with body and returns the status, the
// headers and the JSON object answered.
func (c *Client) Do(method, path, body string) (int, http.Header, map[string]any) {
	c.T.Helper()
	req, err := http.NewRequest(method, c.Base+path, strings.NewReader(body))
	if err != nil {
		c.T.Fatal(err)
	}
	// Two bodiless requests signed in the same millisecond have the same
	// signature, which the server takes for a replay: timestamps go up.
	c.last = max(time.Now().Add(c.Skew).UnixMilli(), c.last+1)
	ts := strconv.FormatInt(c.last, 10)
	signed := body
	if method != http.MethodPost {
		signed = "" // §14: GET and DELETE sign an empty body
	}
	m := hmac.New(sha256.New, []byte(c.Secret))
	m.Write([]byte(ts + "." + c.Installation + "." + signed))
	req.Header.Set("content-type", "application/json")
	req.Header.Set("x-gate-installation", c.Installation)
	req.Header.Set("x-gate-timestamp", ts)
	req.Header.Set("x-gate-signature", "sha256="+hex.EncodeToString(m.Sum(nil)))
	return Send(c.T, req)
}

// Send sends req as it is and returns the status, the headers and the JSON
// object answered; a body that is not one fails the test.
func Send(t testing.TB, req *http.Request) (int, http.Header, map[string]any) {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatalf("%s %s: body %q is not a JSON object", req.Method, req.URL.Path, b)
	}
	return res.StatusCode, res.Header, obj
}
