package auth

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strings"
)

// The JWS part of the verifier is written against the standard library so the
// policy is visible here: the algorithm comes from our allowlist, the key's
// type must fit that algorithm, and no header field (jku, x5u, jwk, x5c) is
// ever allowed to supply a key.

// Algorithm is a JWS signature algorithm name (RFC 7518 §3.1, RFC 8037).
type Algorithm string

// The asymmetric algorithms bastion can verify. HS* and "none" are absent on
// purpose: a resource server holding only public keys has no business with
// shared-secret MACs, and accepting them is how key-confusion attacks work.
const (
	RS256 Algorithm = "RS256"
	RS384 Algorithm = "RS384"
	RS512 Algorithm = "RS512"
	PS256 Algorithm = "PS256"
	PS384 Algorithm = "PS384"
	PS512 Algorithm = "PS512"
	ES256 Algorithm = "ES256"
	ES384 Algorithm = "ES384"
	ES512 Algorithm = "ES512"
	EdDSA Algorithm = "EdDSA"
)

// SupportedAlgorithms lists every Algorithm a JWTConfig may allow.
func SupportedAlgorithms() []Algorithm {
	return []Algorithm{RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA}
}

// DefaultAlgorithms is the allowlist used when JWTConfig.Algorithms is empty.
func DefaultAlgorithms() []Algorithm { return []Algorithm{RS256, ES256, EdDSA} }

// minRSABits refuses toy RSA keys in a JWKS.
const minRSABits = 2048

// hash returns the digest function of a, or 0 for EdDSA (which signs the
// message itself).
func (a Algorithm) hash() crypto.Hash {
	switch a {
	case RS256, PS256, ES256:
		return crypto.SHA256
	case RS384, PS384, ES384:
		return crypto.SHA384
	case RS512, PS512, ES512:
		return crypto.SHA512
	}
	return 0
}

func digest(h crypto.Hash, msg []byte) []byte {
	switch h {
	case crypto.SHA256:
		d := sha256.Sum256(msg)
		return d[:]
	case crypto.SHA384:
		d := sha512.Sum384(msg)
		return d[:]
	case crypto.SHA512:
		d := sha512.Sum512(msg)
		return d[:]
	}
	return nil
}

// fits reports whether key is of the type and size a requires: RS*/PS* an RSA
// key, ES256/384/512 an ECDSA key on P-256/P-384/P-521 respectively, EdDSA an
// Ed25519 key. This is the check that stops an RS256 key from verifying an
// ES256 token and, with HS* absent, the public-key-as-HMAC-secret attack.
func (a Algorithm) fits(key crypto.PublicKey) bool {
	switch k := key.(type) {
	case *rsa.PublicKey:
		switch a {
		case RS256, RS384, RS512, PS256, PS384, PS512:
			return true
		}
	case *ecdsa.PublicKey:
		switch a {
		case ES256:
			return k.Curve == elliptic.P256()
		case ES384:
			return k.Curve == elliptic.P384()
		case ES512:
			return k.Curve == elliptic.P521()
		}
	case ed25519.PublicKey:
		return a == EdDSA
	}
	return false
}

// verify checks sig over msg with key under a. The caller has checked
// a.fits(key).
func (a Algorithm) verify(key crypto.PublicKey, msg, sig []byte) bool {
	switch k := key.(type) {
	case *rsa.PublicKey:
		d := digest(a.hash(), msg)
		switch a {
		case RS256, RS384, RS512:
			return rsa.VerifyPKCS1v15(k, a.hash(), d, sig) == nil
		case PS256, PS384, PS512:
			// RFC 7518 §3.5: the salt is as long as the hash.
			return rsa.VerifyPSS(k, a.hash(), d, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
		}
	case *ecdsa.PublicKey:
		// RFC 7518 §3.4: R and S as fixed-width big-endian, concatenated.
		n := (k.Curve.Params().BitSize + 7) / 8
		if len(sig) != 2*n {
			return false
		}
		r := new(big.Int).SetBytes(sig[:n])
		s := new(big.Int).SetBytes(sig[n:])
		return ecdsa.Verify(k, digest(a.hash(), msg), r, s)
	case ed25519.PublicKey:
		return len(sig) == ed25519.SignatureSize && ed25519.Verify(k, msg, sig)
	}
	return false
}

// b64 is strict unpadded base64url: padding and non-zero trailing bits are
// refused, so each token has one spelling.
var b64 = base64.RawURLEncoding.Strict()

// jwsHeader is the protected header fields bastion reads. Every other field is
// ignored, and in particular never used to find a key.
type jwsHeader struct {
	Alg     string
	Kid     *string // nil when absent
	Typ     string
	HasCrit bool
}

// parseHeader reads the header by exact member name. (encoding/json's struct
// decoding matches names case-insensitively, so {"alg":…,"ALG":…} would be
// read differently here than by other JOSE parsers.)
func parseHeader(b []byte) (jwsHeader, error) {
	var raw map[string]json.RawMessage
	if err := decodeObject(b, &raw); err != nil {
		return jwsHeader{}, err
	}
	var h jwsHeader
	if err := json.Unmarshal(raw["alg"], &h.Alg); err != nil {
		return jwsHeader{}, errors.New("alg is not a string")
	}
	if k, ok := raw["kid"]; ok {
		h.Kid = new(string)
		if err := json.Unmarshal(k, h.Kid); err != nil {
			return jwsHeader{}, errors.New("kid is not a string")
		}
		if *h.Kid == "" { // "" and null name no key: same as absent
			h.Kid = nil
		}
	}
	if t, ok := raw["typ"]; ok {
		if err := json.Unmarshal(t, &h.Typ); err != nil {
			return jwsHeader{}, errors.New("typ is not a string")
		}
	}
	_, h.HasCrit = raw["crit"]
	return h, nil
}

// compactJWS is a parsed, not yet verified, compact JWS.
type compactJWS struct {
	header  jwsHeader
	payload []byte
	signed  []byte // ASCII(BASE64URL(header) || '.' || BASE64URL(payload))
	sig     []byte
}

// parseCompact splits and decodes a compact JWS. It checks form only.
func parseCompact(tok string) (*compactJWS, error) {
	h, rest, ok1 := strings.Cut(tok, ".")
	p, s, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(s, ".") || h == "" || p == "" || s == "" {
		return nil, invalid(ReasonMalformed) // also refuses JWE (5 parts) and unsigned forms
	}
	hb, err := b64.DecodeString(h)
	if err != nil {
		return nil, invalid(ReasonMalformed)
	}
	var j compactJWS
	if j.header, err = parseHeader(hb); err != nil {
		return nil, invalid(ReasonMalformed)
	}
	if j.payload, err = b64.DecodeString(p); err != nil {
		return nil, invalid(ReasonMalformed)
	}
	if j.sig, err = b64.DecodeString(s); err != nil {
		return nil, invalid(ReasonMalformed)
	}
	j.signed = []byte(tok[:len(h)+1+len(p)])
	return &j, nil
}

// errDuplicateKey marks a JSON object that names a member twice. Parsers
// disagree on which copy wins, so such a header or claim set is refused.
var errDuplicateKey = errors.New("duplicate JSON object member")

// decodeObject unmarshals a JSON object into v after checking that its top
// level has no duplicate members and nothing trails it.
func decodeObject(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("not a JSON object")
	}
	seen := make(map[string]bool)
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := k.(string)
		if seen[name] {
			return errDuplicateKey
		}
		seen[name] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after JSON object")
	}
	return json.Unmarshal(b, v)
}

// jwk is the subset of RFC 7517 members bastion reads from a JWKS.
type jwk struct {
	Kty    string   `json:"kty"`
	Kid    string   `json:"kid"`
	Use    string   `json:"use"`
	KeyOps []string `json:"key_ops"`
	Alg    string   `json:"alg"`
	Crv    string   `json:"crv"`
	N      string   `json:"n"`
	E      string   `json:"e"`
	X      string   `json:"x"`
	Y      string   `json:"y"`
}

// verifyKey is one usable public key from a JWKS.
type verifyKey struct {
	kid string
	alg Algorithm // from the JWK's "alg", or "" when it names none
	key crypto.PublicKey
}

// parseJWK turns one JWK into a verification key. Symmetric ("oct") keys,
// keys not meant for signatures, and malformed or weak keys are errors; the
// caller skips them.
func parseJWK(k jwk) (verifyKey, error) {
	if k.Use != "" && k.Use != "sig" {
		return verifyKey{}, fmt.Errorf("key use %q is not sig", k.Use)
	}
	if len(k.KeyOps) > 0 && !containsString(k.KeyOps, "verify") {
		return verifyKey{}, errors.New("key_ops lacks verify")
	}
	vk := verifyKey{kid: k.Kid, alg: Algorithm(k.Alg)}
	switch k.Kty {
	case "RSA":
		n, err1 := b64.DecodeString(k.N)
		e, err2 := b64.DecodeString(k.E)
		if err1 != nil || err2 != nil || len(e) == 0 || len(e) > 4 || len(n) == 0 || n[0] == 0 {
			return verifyKey{}, errors.New("malformed RSA key")
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if pub.N.BitLen() < minRSABits {
			return verifyKey{}, fmt.Errorf("RSA key of %d bits is too small", pub.N.BitLen())
		}
		if pub.E < 3 || pub.E%2 == 0 {
			return verifyKey{}, errors.New("bad RSA exponent")
		}
		vk.key = pub
	case "EC":
		var curve elliptic.Curve
		switch k.Crv {
		case "P-256":
			curve = elliptic.P256()
		case "P-384":
			curve = elliptic.P384()
		case "P-521":
			curve = elliptic.P521()
		default:
			return verifyKey{}, fmt.Errorf("unsupported curve %q", k.Crv)
		}
		size := (curve.Params().BitSize + 7) / 8
		x, err1 := b64.DecodeString(k.X)
		y, err2 := b64.DecodeString(k.Y)
		if err1 != nil || err2 != nil || len(x) != size || len(y) != size {
			return verifyKey{}, errors.New("malformed EC key")
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, append(append([]byte{4}, x...), y...))
		if err != nil {
			return verifyKey{}, errors.New("EC point not on curve")
		}
		vk.key = pub
	case "OKP":
		if k.Crv != "Ed25519" {
			return verifyKey{}, fmt.Errorf("unsupported OKP curve %q", k.Crv)
		}
		x, err := b64.DecodeString(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return verifyKey{}, errors.New("malformed Ed25519 key")
		}
		vk.key = ed25519.PublicKey(x)
	default:
		return verifyKey{}, fmt.Errorf("unsupported key type %q", k.Kty)
	}
	if vk.alg != "" && !vk.alg.fits(vk.key) {
		return verifyKey{}, fmt.Errorf("key alg %q does not fit its key type", k.Alg)
	}
	return vk, nil
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// parseJWKS parses a JWK Set, keeping the usable keys. A set with no usable
// key is an error: the verifier then keeps the previous set.
func parseJWKS(b []byte) ([]verifyKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("JWKS is not JSON: %w", err)
	}
	var keys []verifyKey
	for _, raw := range set.Keys {
		var k jwk
		if err := json.Unmarshal(raw, &k); err != nil {
			continue
		}
		vk, err := parseJWK(k)
		if err != nil {
			continue
		}
		keys = append(keys, vk)
	}
	if len(keys) == 0 {
		return nil, errors.New("JWKS has no usable signing key")
	}
	return keys, nil
}
