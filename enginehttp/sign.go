package enginehttp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The job API's headers (peer contract §14).
const (
	HeaderInstallation  = "X-Gate-Installation"
	HeaderTimestamp     = "X-Gate-Timestamp"
	HeaderSignature     = "X-Gate-Signature"
	HeaderSchemaVersion = "X-Schema-Version"
	// SchemaVersion is the x-schema-version of every job read.
	SchemaVersion = "1"
	// MaxSkew is how far a request's timestamp may be from the server's
	// clock, either way.
	MaxSkew = 300 * time.Second
)

const sigPrefix = "sha256="

// Sign returns the x-gate-signature of a request: "sha256=" and the hex
// HMAC-SHA256 under secret of timestamp + "." + installation + "." + body,
// where timestamp is the x-gate-timestamp header as sent (milliseconds
// since the Unix epoch) and body is "" for GET and DELETE.
func Sign(secret []byte, timestamp, installation string, body []byte) string {
	return sigPrefix + hex.EncodeToString(mac(secret, timestamp, installation, body))
}

func mac(secret []byte, timestamp, installation string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write([]byte(installation))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Why a request was refused. Every one is answered 401 with the same body;
// the reason goes to the log only.
var (
	ErrUnsigned     = errors.New("enginehttp: missing or malformed signature headers")
	ErrStale        = errors.New("enginehttp: timestamp outside the skew window")
	ErrBadSignature = errors.New("enginehttp: signature does not match") // also an unknown installation
	ErrReplayed     = errors.New("enginehttp: signature already used")
	// ErrReplayFull is the one refusal that is not 401: the replay cache
	// is full of live signatures, so the request cannot be checked (503).
	ErrReplayFull = errors.New("enginehttp: too many recent requests to check for replay")
)

// Signed is what the signature headers claim, parsed but not yet verified.
type Signed struct {
	Installation string
	Timestamp    string // as sent
	Millis       int64
	Sig          []byte // the 32-byte MAC
}

// ParseHeaders reads the three signature headers. Each must appear once:
// the installation a valid id, the timestamp 1 to 16 decimal digits, the
// signature "sha256=" and 64 hex digits.
func ParseHeaders(h http.Header) (Signed, error) {
	one := func(k string) (string, bool) {
		v := h.Values(k)
		return strings.Join(v, ""), len(v) == 1
	}
	inst, ok1 := one(HeaderInstallation)
	ts, ok2 := one(HeaderTimestamp)
	sig, ok3 := one(HeaderSignature)
	if !ok1 || !ok2 || !ok3 || !ValidInstallationID(inst) || len(ts) == 0 || len(ts) > 16 {
		return Signed{}, ErrUnsigned
	}
	for _, c := range []byte(ts) {
		if c < '0' || c > '9' {
			return Signed{}, ErrUnsigned
		}
	}
	ms, err := strconv.ParseInt(ts, 10, 64)
	hexSig, ok := strings.CutPrefix(sig, sigPrefix)
	if err != nil || !ok || len(hexSig) != 2*sha256.Size {
		return Signed{}, ErrUnsigned
	}
	raw, err := hex.DecodeString(hexSig)
	if err != nil {
		return Signed{}, ErrUnsigned
	}
	return Signed{Installation: inst, Timestamp: ts, Millis: ms, Sig: raw}, nil
}

// dummyKey is the HMAC key for an unknown installation, so its refusal
// costs the same MAC as a wrong signature.
var dummyKey = make([]byte, minSecretLen)

// Verifier checks signed requests against the installations' secrets, the
// skew window and the signatures it has already accepted. It is safe for
// concurrent use.
type Verifier struct {
	// Secrets returns the secrets in force (SecretsFile.Current).
	Secrets func() *Secrets
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	replay replayCache
}

// Verify checks s against body (nil or empty for GET and DELETE): the
// timestamp within MaxSkew of now, the MAC under the installation's secret
// compared in constant time, and the signature not seen before. It returns
// the installation, or one of the Err values.
func (v *Verifier) Verify(s Signed, body []byte) (string, error) {
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	nowMS := now().UnixMilli()
	if d := nowMS - s.Millis; d > MaxSkew.Milliseconds() || d < -MaxSkew.Milliseconds() {
		return "", ErrStale
	}
	key, known := v.Secrets().Lookup(s.Installation)
	if !known {
		key = dummyKey
	}
	want := mac(key, s.Timestamp, s.Installation, body)
	if !hmac.Equal(want, s.Sig) || !known {
		return "", ErrBadSignature
	}
	// The signature covers neither method nor path, so a captured GET's
	// headers would authorize a DELETE of any job within the window: each
	// signature is accepted once. It is kept until its timestamp leaves
	// the window, after which ErrStale refuses it anyway.
	if err := v.replay.add(s.Installation, s.Sig, s.Millis+MaxSkew.Milliseconds(), nowMS); err != nil {
		return "", err
	}
	return s.Installation, nil
}

// maxReplayEntries bounds the replay cache (about 60 bytes an entry). Only
// correctly signed requests enter it, so only an installation's own client
// can fill it, at over 800 requests a second sustained for the window.
const maxReplayEntries = 1 << 19

// replayCache remembers accepted signatures until they would be stale.
type replayCache struct {
	mu        sync.Mutex
	seen      map[[sha256.Size]byte]int64 // sha256(installation, signature) → expiry (ms)
	nextSweep int                         // sweep expired entries when seen reaches this size
}

func (c *replayCache) add(inst string, sig []byte, expiresMS, nowMS int64) error {
	h := sha256.New()
	h.Write([]byte(inst))
	h.Write([]byte{0})
	h.Write(sig)
	var k [sha256.Size]byte
	h.Sum(k[:0])
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[[sha256.Size]byte]int64{}
	}
	if exp, ok := c.seen[k]; ok && exp >= nowMS {
		return ErrReplayed
	}
	if len(c.seen) >= max(c.nextSweep, 1024) {
		// Amortized: a sweep at twice the size left by the last one.
		for key, exp := range c.seen {
			if exp < nowMS {
				delete(c.seen, key)
			}
		}
		c.nextSweep = 2 * len(c.seen)
	}
	if len(c.seen) >= maxReplayEntries {
		return ErrReplayFull
	}
	c.seen[k] = expiresMS
	return nil
}
