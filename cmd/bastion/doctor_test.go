package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bastion-mcp/bastion/capture"
	"github.com/bastion-mcp/bastion/internal/testenv"
	"github.com/bastion-mcp/bastion/store/postgres"
)

// doctorLine returns the line of the check named name in doctor's output.
func doctorLine(out, name string) string {
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) > 1 && f[1] == name {
			return line
		}
	}
	return ""
}

// TestDoctorPasses: where the tests' Chromium, fonts and PostgreSQL are,
// doctor launches the browser for real, connects to the database as the
// serving role and exits 0.
func TestDoctorPasses(t *testing.T) {
	testenv.Chromium(t)
	pg := testenv.StartPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := postgres.CreateAppRole(ctx, pg.AdminURL(), "bastion_doctor_app", "doctor-pass"); err != nil {
		t.Fatal(err)
	}
	dbURL := strings.Replace(pg.NewDatabase(t), "postgres@", "bastion_doctor_app:doctor-pass@", 1)
	stdout, stderr, code := runCLI(t, "doctor", "--data-dir", t.TempDir(), "--database-url", dbURL)
	if code != 0 {
		t.Fatalf("doctor exit %d\n%s%s", code, stdout, stderr)
	}
	for name, want := range map[string]string{
		"chromium": "launched headless",
		"data-dir": "is writable",
		"postgres": "connected as bastion_doctor_app",
	} {
		if line := doctorLine(stdout, name); !strings.HasPrefix(line, "ok ") || !strings.Contains(line, want) {
			t.Errorf("%s: line %q, want ok and %q\n%s", name, line, want, stdout)
		}
	}
	if line := doctorLine(stdout, "fonts"); strings.HasPrefix(line, "FAIL") {
		t.Errorf("fonts: %q where make deps installed them", line)
	}
	if strings.Contains(stdout, "doctor-pass") || strings.Contains(stderr, "doctor-pass") {
		t.Error("doctor printed the database password")
	}
}

// TestDoctorFailures: a browser variable naming nothing, a read-only data
// directory and an unreachable database each fail with what to do, the
// password stays out of the output, and the exit status is 1. With a
// database the data directory is only recommended, so it warns.
func TestDoctorFailures(t *testing.T) {
	t.Setenv(capture.ChromeEnv, "/nonexistent")
	ro := testenv.ReadOnlyDir(t)
	const badDB = "postgres://someone:s3cret-pw@127.0.0.1:1/bastion?sslmode=disable"
	for _, tc := range []struct {
		args []string
		want map[string]string // check name → status and a word of its line
	}{
		{[]string{"--data-dir", ro + "/bastion"}, map[string]string{
			"chromium": "FAIL BASTION_CHROMIUM=/nonexistent", "data-dir": "FAIL " + ro, "postgres": "skip not configured"}},
		{[]string{"--data-dir", ro + "/bastion", "--database-url", badDB}, map[string]string{
			"chromium": "FAIL BASTION_CHROMIUM=/nonexistent", "data-dir": "warn " + ro, "postgres": "FAIL 127.0.0.1"}},
	} {
		stdout, stderr, code := runCLI(t, append([]string{"doctor"}, tc.args...)...)
		if code != 1 {
			t.Fatalf("doctor %v: exit %d, want 1\n%s%s", tc.args, code, stdout, stderr)
		}
		for name, want := range tc.want {
			status, word, _ := strings.Cut(want, " ")
			if line := doctorLine(stdout, name); !strings.HasPrefix(line, status+" ") || !strings.Contains(line, word) {
				t.Errorf("doctor %v: %s: line %q, want %s naming %q", tc.args, name, line, status, word)
			}
		}
		// Every failure and warning is followed by its fix; the browser's
		// names the install and the variable.
		if fixes, problems := strings.Count(stdout, "fix: "), strings.Count(stdout, "FAIL  ")+strings.Count(stdout, "warn  "); fixes != problems {
			t.Errorf("doctor %v: %d fixes for %d problems:\n%s", tc.args, fixes, problems, stdout)
		}
		if fix := stdout[strings.Index(stdout, "FAIL  chromium"):]; !strings.Contains(fix, "install") || !strings.Contains(fix, "set BASTION_CHROMIUM") {
			t.Errorf("no install hint for the browser:\n%s", stdout)
		}
		if strings.Contains(stdout+stderr, "s3cret-pw") {
			t.Error("doctor printed the database password")
		}
		if !strings.Contains(stdout, "a review cannot run here") {
			t.Errorf("no verdict line:\n%s", stdout)
		}
	}
}
