package enginehttp

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestParseSecrets(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("s", minSecretLen)
	cases := []struct {
		name, in string
		ids      []string
		errHas   string
	}{
		{"Empty", "", []string{}, ""},
		{"CommentsAndBlanks", "# c\n\n  \nacme " + long + "\n", []string{"acme"}, ""},
		{"Two", "b.x:1 " + long + "\na_y-2 " + long + "x\n", []string{"a_y-2", "b.x:1"}, ""},
		{"ExtraSpaces", "acme    " + long + "   \n", []string{"acme"}, ""},
		{"ShortSecret", "acme short\n", nil, "line 1: the secret of acme"},
		{"NoSecret", "acme\n", nil, "line 1: want"},
		{"ThreeFields", "acme " + long + " more\n", nil, "line 1: want"},
		{"Duplicate", "acme " + long + "\nacme " + long + "y\n", nil, "line 2: installation acme appears twice"},
		{"BadID", "ac/me " + long + "\n", nil, "line 1: the installation id"},
		{"NonASCIISecret", "acme " + long + "é\n", nil, "line 1: the secret"},
		{"Tab", "acme\t" + long + "\n", nil, "line 1: want"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := ParseSecrets([]byte(tc.in))
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err = %v, want one containing %q", err, tc.errHas)
				}
				if strings.Contains(err.Error(), long) {
					t.Fatalf("error %q shows the secret", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Installations(); !slices.Equal(got, tc.ids) {
				t.Fatalf("Installations() = %v, want %v", got, tc.ids)
			}
		})
	}
}

// FuzzParseSecrets: any input parses or fails without panicking, and a
// parsed file round-trips through encode unchanged.
func FuzzParseSecrets(f *testing.F) {
	f.Add([]byte("acme " + testSecret + "\n# x\n"))
	f.Add([]byte("a " + testSecret + "\na " + testSecret))
	f.Add([]byte("\x00 \xff\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSecrets(b)
		if err != nil {
			return
		}
		again, err := ParseSecrets(s.encode())
		if err != nil {
			t.Fatalf("encode of a parsed file does not parse: %v", err)
		}
		if !slices.Equal(again.Installations(), s.Installations()) {
			t.Fatalf("round trip changed the installations: %v → %v", s.Installations(), again.Installations())
		}
		for _, id := range s.Installations() {
			a, _ := s.Lookup(id)
			b, _ := again.Lookup(id)
			if !bytes.Equal(a, b) {
				t.Fatalf("round trip changed %s's secret", id)
			}
		}
	})
}

// TestRotateSecret: rotation creates the file 0600, replaces one
// installation's secret and keeps the others', and a SecretsFile opened
// before the rotation serves the new secret on its next read.
func TestRotateSecret(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "secrets")
	first, err := RotateSecret(ctx, path, "acme")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, want 0600", fi.Mode().Perm())
	}
	globex, err := RotateSecret(ctx, path, "globex")
	if err != nil {
		t.Fatal(err)
	}
	sf, err := OpenSecretsFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if k, _ := sf.Current().Lookup("acme"); string(k) != first {
		t.Fatal("acme's first secret is not in force")
	}
	second, err := RotateSecret(ctx, path, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if second == first || len(second) != 43 {
		t.Fatalf("rotation gave %q after %q", second, first)
	}
	cur := sf.Current()
	if k, _ := cur.Lookup("acme"); string(k) != second {
		t.Fatal("the server still holds acme's old secret after the rotation")
	}
	if k, _ := cur.Lookup("globex"); string(k) != globex {
		t.Fatal("rotating acme changed globex's secret")
	}
}

// TestRotateSecretConcurrent: rotations of different installations in
// parallel all land (the lock serializes the read-modify-write).
func TestRotateSecretConcurrent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "secrets")
	const n = 8
	got := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, err := RotateSecret(context.Background(), path, fmt.Sprintf("inst-%d", i))
			if err != nil {
				t.Error(err)
			}
			got[i] = s
		})
	}
	wg.Wait()
	s, _, err := readSecrets(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if k, _ := s.Lookup(fmt.Sprintf("inst-%d", i)); string(k) != got[i] {
			t.Errorf("inst-%d lost its rotation", i)
		}
	}
}

// TestSecretsFileKeepsSecretsOnBadEdit: a replacement that does not parse
// leaves the previous secrets in force; a later good one is read.
func TestSecretsFileKeepsSecretsOnBadEdit(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "secrets")
	write := func(s string) {
		t.Helper()
		tmp := path + ".new"
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write("acme " + testSecret + "\n")
	sf, err := OpenSecretsFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	write("acme tooshort\n")
	if k, ok := sf.Current().Lookup("acme"); !ok || string(k) != testSecret {
		t.Fatal("a bad replacement displaced the secrets in force")
	}
	write("acme " + testSecret + "-v2\n")
	if k, _ := sf.Current().Lookup("acme"); string(k) != testSecret+"-v2" {
		t.Fatal("a good replacement after a bad one was not read")
	}
}

func TestOpenSecretsFileRefusesWideMode(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "secrets")
	if err := os.WriteFile(path, []byte("acme "+testSecret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenSecretsFile(path, nil); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("err = %v, want a refusal naming chmod 600", err)
	}
}
