package audit

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Checkpoint is a signed statement "the ledger's record Seq has hash Hash".
// Checkpoints live in their own file (checkpoints.jsonl), one canonical JSON
// line each, keys sorted: hash, key_id, seq, signature, time, v. Signature is
// hex Ed25519 over checkpointDomain followed by the canonical encoding
// without the signature key. A ledger whose records stop below a signed
// checkpoint's seq, or whose record at that seq has another hash, has been
// truncated or rewritten.
type Checkpoint struct {
	Seq       uint64
	Hash      string
	Time      time.Time
	KeyID     string // first 16 hex digits of SHA-256 over the raw public key
	Signature string // hex Ed25519 signature, 128 digits
}

// checkpointDomain separates checkpoint signatures from any other use of the
// key.
const checkpointDomain = "bastion-audit-checkpoint-v1\x00"

func (c *Checkpoint) appendJSON(b []byte, withSig bool) []byte {
	b = append(b, `{"hash":`...)
	b = appendString(b, c.Hash)
	b = append(b, `,"key_id":`...)
	b = appendString(b, c.KeyID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, c.Seq, 10)
	if withSig {
		b = append(b, `,"signature":`...)
		b = appendString(b, c.Signature)
	}
	b = append(b, `,"time":"`...)
	b = c.Time.UTC().AppendFormat(b, timeLayout)
	b = append(b, `","v":`...)
	b = strconv.AppendUint(b, checkpointVersion, 10)
	return append(b, '}')
}

func (c *Checkpoint) signedBytes() []byte {
	return c.appendJSON([]byte(checkpointDomain), false)
}

// sign fills KeyID and Signature.
func (c *Checkpoint) sign(key ed25519.PrivateKey) {
	c.KeyID = KeyID(key.Public().(ed25519.PublicKey))
	c.Signature = hex.EncodeToString(ed25519.Sign(key, c.signedBytes()))
}

// verify reports whether c carries a valid signature by pub.
func (c *Checkpoint) verify(pub ed25519.PublicKey) error {
	if c.KeyID != KeyID(pub) {
		return fmt.Errorf("signed by key %s, not by the verifying key %s", c.KeyID, KeyID(pub))
	}
	sig, err := hex.DecodeString(c.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return errors.New("malformed signature")
	}
	if !ed25519.Verify(pub, c.signedBytes(), sig) {
		return errors.New("bad signature")
	}
	return nil
}

type wireCheckpoint struct {
	Hash      *string `json:"hash"`
	KeyID     *string `json:"key_id"`
	Seq       *uint64 `json:"seq"`
	Signature *string `json:"signature"`
	Time      *string `json:"time"`
	V         *uint64 `json:"v"`
}

// parseCheckpoint decodes one canonical checkpoint line; like ParseRecord it
// accepts only the exact canonical bytes.
func parseCheckpoint(line []byte) (Checkpoint, error) {
	var w wireCheckpoint
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return Checkpoint{}, fmt.Errorf("audit: checkpoint: %w", err)
	}
	if dec.More() {
		return Checkpoint{}, errors.New("audit: checkpoint: trailing data")
	}
	if w.Hash == nil || w.KeyID == nil || w.Seq == nil || w.Signature == nil || w.Time == nil || w.V == nil {
		return Checkpoint{}, errors.New("audit: checkpoint: missing field")
	}
	if *w.V != checkpointVersion {
		return Checkpoint{}, fmt.Errorf("audit: checkpoint: unknown format version %d", *w.V)
	}
	t, err := time.Parse(time.RFC3339Nano, *w.Time)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("audit: checkpoint: time: %w", err)
	}
	c := Checkpoint{Seq: *w.Seq, Hash: *w.Hash, Time: t.UTC(), KeyID: *w.KeyID, Signature: *w.Signature}
	if !isHex64(c.Hash) {
		return Checkpoint{}, errors.New("audit: checkpoint: hash must be 64 lowercase hex digits")
	}
	if !bytes.Equal(c.appendJSON(nil, true), line) {
		return Checkpoint{}, fmt.Errorf("audit: checkpoint: %w", errNotCanonical)
	}
	return c, nil
}

// KeyID names a public key: the first 16 hex digits of SHA-256 over its raw
// 32 bytes.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// LoadOrCreateKey reads an Ed25519 private key (PKCS#8 PEM) from path, or
// generates one and writes it with mode 0600 when path does not exist. An
// existing key file readable by group or others is refused: the key is what
// makes checkpoints worth anything.
func LoadOrCreateKey(path string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return createKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("audit: signing key: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("audit: signing key %s has mode %v; it must not be readable by group or others (chmod 600)", path, fi.Mode().Perm())
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("audit: signing key %s: not a PEM \"PRIVATE KEY\"", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("audit: signing key %s: %w", path, err)
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("audit: signing key %s: not an Ed25519 key", path)
	}
	return ek, nil
}

func createKey(path string) (ed25519.PrivateKey, error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("audit: generate signing key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("audit: encode signing key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit: signing key dir: %w", err)
	}
	// O_EXCL: if another process created the key meanwhile, fail rather than
	// overwrite a key that may already have signed checkpoints.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: create signing key: %w", err)
	}
	_, err = f.Write(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("audit: write signing key: %w", err)
	}
	return key, nil
}

// EncodePublicKey returns pub as a PEM "PUBLIC KEY" (PKIX) block.
func EncodePublicKey(pub ed25519.PublicKey) []byte {
	der, _ := x509.MarshalPKIXPublicKey(pub) // cannot fail for a 32-byte Ed25519 key
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// ParsePublicKey reads a PEM "PUBLIC KEY" block holding an Ed25519 key.
func ParsePublicKey(b []byte) (ed25519.PublicKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PUBLIC KEY" {
		return nil, errors.New("audit: public key: not a PEM \"PUBLIC KEY\"")
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("audit: public key: %w", err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, errors.New("audit: public key: not an Ed25519 key")
	}
	return pub, nil
}
