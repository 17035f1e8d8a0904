package enginehttp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/bastion-mcp/bastion/internal/atomicfile"
)

// The secrets file holds one HMAC secret per installation, one per line:
//
//	# comment
//	INSTALLATION-ID SECRET
//
// The id is 1 to 128 of [A-Za-z0-9._:-] (it is also the tenant whose
// verified hosts the installation may have reviewed); the secret is 32 to
// 512 printable ASCII characters without spaces, used as the HMAC key's
// bytes, exactly as the client's ENGINE_HMAC_SECRET is. Blank lines and
// lines starting with # are ignored; an id may appear once. The file must
// not be readable by group or others.
const (
	minSecretLen = 32
	maxSecretLen = 512
	maxIDLen     = 128
	// maxSecretsFile bounds the file read, so a wrong path (a log, a
	// device) fails fast instead of being read whole.
	maxSecretsFile = 4 << 20
)

var idPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// ValidInstallationID reports whether id may name an installation.
func ValidInstallationID(id string) bool { return idPattern.MatchString(id) }

// Secrets is a parsed secrets file. It is immutable; the zero value holds
// no installation.
type Secrets struct {
	byID map[string][]byte
}

// ParseSecrets parses a secrets file. Errors name the line, never a secret.
func ParseSecrets(b []byte) (*Secrets, error) {
	s := &Secrets{byID: map[string][]byte{}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 1024), maxSecretsFile)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, secret, ok := strings.Cut(line, " ")
		secret = strings.TrimLeft(secret, " ")
		switch {
		case !ok || strings.ContainsAny(secret, " \t"):
			return nil, fmt.Errorf("line %d: want INSTALLATION-ID SECRET", n)
		case !ValidInstallationID(id):
			return nil, fmt.Errorf("line %d: the installation id must be 1 to %d of A-Z a-z 0-9 . _ : -", n, maxIDLen)
		case !validSecret(secret):
			return nil, fmt.Errorf("line %d: the secret of %s must be %d to %d printable ASCII characters without spaces", n, id, minSecretLen, maxSecretLen)
		case s.byID[id] != nil:
			return nil, fmt.Errorf("line %d: installation %s appears twice", n, id)
		}
		s.byID[id] = []byte(secret)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

func validSecret(s string) bool {
	if len(s) < minSecretLen || len(s) > maxSecretLen {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return r <= 0x20 || r >= 0x7f })
}

// Lookup returns id's secret; the slice must not be modified.
func (s *Secrets) Lookup(id string) ([]byte, bool) {
	if s == nil {
		return nil, false
	}
	k, ok := s.byID[id]
	return k, ok
}

// Installations lists the installation ids, sorted.
func (s *Secrets) Installations() []string {
	if s == nil {
		return nil
	}
	ids := make([]string, 0, len(s.byID))
	for id := range s.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// encode writes s back in the file format, sorted by id.
func (s *Secrets) encode() []byte {
	var b bytes.Buffer
	b.WriteString("# bastion engine installation secrets: INSTALLATION-ID SECRET, one per line.\n")
	b.WriteString("# Written by `bastion engine secret rotate`; keep it 0600.\n")
	for _, id := range s.Installations() {
		fmt.Fprintf(&b, "%s %s\n", id, s.byID[id])
	}
	return b.Bytes()
}

// readSecrets reads and parses the file at path, refusing one that group or
// others may read.
func readSecrets(path string) (*Secrets, os.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("secrets file %s is not a regular file", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, nil, fmt.Errorf("secrets file %s is readable by group or others (mode %v): chmod 600 it", path, fi.Mode().Perm())
	}
	if fi.Size() > maxSecretsFile {
		return nil, nil, fmt.Errorf("secrets file %s is larger than %d bytes", path, maxSecretsFile)
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil && fi.Size() > 0 {
		return nil, nil, err
	}
	s, err := ParseSecrets(b)
	if err != nil {
		return nil, nil, fmt.Errorf("secrets file %s: %w", path, err)
	}
	return s, fi, nil
}

// SecretsFile is the secrets file as the server reads it: parsed once at
// open, and again whenever the file is replaced (a rotation renames a new
// file over it), checked on each request. A replacement that does not parse
// is logged and the previous secrets stay in force, so a bad edit cannot
// lock every installation out. It is safe for concurrent use.
type SecretsFile struct {
	path string
	log  *slog.Logger

	mu   sync.Mutex // guards cur and info; held across the stat and a reload's read
	cur  *Secrets
	info os.FileInfo // of the file cur was read from, or of the last bad replacement
}

// OpenSecretsFile reads the secrets file at path. log may be nil.
func OpenSecretsFile(path string, log *slog.Logger) (*SecretsFile, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s, fi, err := readSecrets(path)
	if err != nil {
		return nil, err
	}
	return &SecretsFile{path: path, log: log, cur: s, info: fi}, nil
}

// Current returns the secrets in force, re-reading the file if it was
// replaced or changed since the last read.
func (f *SecretsFile) Current() *Secrets {
	f.mu.Lock()
	defer f.mu.Unlock()
	fi, err := os.Stat(f.path)
	if err != nil || sameFile(fi, f.info) {
		if err != nil {
			f.log.Warn("enginehttp: secrets file unreadable; keeping the secrets in force", "path", f.path, "err", err)
		}
		return f.cur
	}
	s, nfi, err := readSecrets(f.path)
	if err != nil {
		f.info = fi // log once per bad version, not once per request
		f.log.Error("enginehttp: secrets file changed but cannot be used; keeping the secrets in force", "err", err)
		return f.cur
	}
	f.cur, f.info = s, nfi
	f.log.Info("enginehttp: secrets file reloaded", "installations", len(s.byID))
	return f.cur
}

func sameFile(a, b os.FileInfo) bool {
	return b != nil && os.SameFile(a, b) && a.ModTime().Equal(b.ModTime()) && a.Size() == b.Size()
}

// NewSecret returns a fresh secret: 32 random bytes, base64url without
// padding (43 characters).
func NewSecret() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// RotateSecret gives installation id a new secret in the secrets file at
// path (creating the file if it does not exist) and returns it. The file is
// replaced atomically (atomicfile) under an exclusive lock on PATH.lock, so
// concurrent rotations of different installations both land, and a server
// reading the file sees the old file or the new one. The previous secret
// stops working as soon as a server reads the new file.
func RotateSecret(ctx context.Context, path, id string) (string, error) {
	if !ValidInstallationID(id) {
		return "", fmt.Errorf("the installation id must be 1 to %d of A-Z a-z 0-9 . _ : -", maxIDLen)
	}
	unlock, err := atomicfile.Lock(ctx, path+".lock")
	if err != nil {
		return "", fmt.Errorf("lock the secrets file: %w", err)
	}
	defer unlock()
	s, _, err := readSecrets(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		s = &Secrets{byID: map[string][]byte{}}
	case err != nil:
		return "", err
	}
	next := &Secrets{byID: make(map[string][]byte, len(s.byID)+1)}
	for k, v := range s.byID {
		next.byID[k] = v
	}
	secret := NewSecret()
	next.byID[id] = []byte(secret)
	if err := atomicfile.WriteFile(path, next.encode()); err != nil {
		return "", fmt.Errorf("write the secrets file: %w", err)
	}
	return secret, nil
}
