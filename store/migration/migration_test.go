package migration

import (
	"errors"
	"testing"
	"testing/fstest"
)

func TestLoadAndPending(t *testing.T) {
	fsys := fstest.MapFS{
		"0002_b.sql": {Data: []byte("B")},
		"0001_a.sql": {Data: []byte("A")},
		"README.md":  {Data: []byte("not a migration")},
	}
	files, err := Load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].ID != "0001_a" || files[1].ID != "0002_b" {
		t.Fatalf("Load = %+v, want 0001_a then 0002_b", files)
	}
	// sha256("A")
	if want := "sha256:559aead08264d5795d3909718cdd05abd49572e84fe55590eef31a88a08fdffd"; files[0].Sum != want {
		t.Fatalf("sum = %s, want %s", files[0].Sum, want)
	}

	pend, err := Pending(files, map[string]string{"0001_a": files[0].Sum, "0009_newer": "sha256:ff"})
	if err != nil {
		t.Fatalf("Pending with a newer unknown id: %v", err)
	}
	if len(pend) != 1 || pend[0].ID != "0002_b" {
		t.Fatalf("Pending = %+v, want only 0002_b", pend)
	}

	_, err = Pending(files, map[string]string{"0001_a": "sha256:00"})
	if !errors.Is(err, ErrChanged) {
		t.Fatalf("Pending with a changed file: err = %v, want ErrChanged", err)
	}
}

func TestCurrent(t *testing.T) {
	files := []File{{ID: "0001_a", Sum: "sha256:aa"}, {ID: "0002_b", Sum: "sha256:bb"}}
	if err := Current(files, map[string]string{"0001_a": "sha256:aa", "0002_b": "sha256:bb", "0003_newer": "x"}); err != nil {
		t.Errorf("all applied (and a newer one): %v", err)
	}
	if err := Current(files, map[string]string{"0001_a": "sha256:aa"}); err == nil {
		t.Error("one not applied: no error")
	}
	if err := Current(files, map[string]string{"0001_a": "sha256:zz", "0002_b": "sha256:bb"}); !errors.Is(err, ErrChanged) {
		t.Errorf("a changed file: %v, want ErrChanged", err)
	}
}
