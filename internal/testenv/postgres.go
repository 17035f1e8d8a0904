package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Postgres is a throwaway PostgreSQL cluster started from the system's
// binaries in a temporary directory, or the server named by
// BASTION_TEST_DATABASE_URL. Each call to NewDatabase gives a fresh database.
type Postgres struct {
	admin string // URL of a superuser connection to the maintenance database
}

// StartPostgres returns a PostgreSQL server for t, skipping loudly (failing in
// CI) when none can be had. A cluster it starts is stopped when t ends.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	if u := os.Getenv("BASTION_TEST_DATABASE_URL"); u != "" {
		return &Postgres{admin: u}
	}
	bin, err := postgresBin()
	if err != nil {
		Missing(t, "PostgreSQL server binaries ("+err.Error()+")")
	}
	dir, err := os.MkdirTemp("", "bastion-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })

	// initdb and postgres refuse to run as root; run them as the postgres
	// account the Debian package creates.
	var asUser []string
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			Missing(t, "a postgres system user to run a throwaway cluster as")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	run := func(name string, args ...string) {
		t.Helper()
		argv := append(append(append([]string{}, asUser...), filepath.Join(bin, name)), args...)
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
	}
	data := filepath.Join(dir, "data")
	run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C")
	port := freePort(t)
	run("pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start",
		"-o", fmt.Sprintf("-h 127.0.0.1 -p %d -k %s -F -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200", port, dir))
	t.Cleanup(func() {
		argv := append(append(append([]string{}, asUser...), filepath.Join(bin, "pg_ctl")), "-D", data, "-m", "immediate", "-w", "stop")
		_ = exec.Command(argv[0], argv[1:]...).Run()
	})
	return &Postgres{admin: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)}
}

// AdminURL is a superuser URL for the maintenance database.
func (p *Postgres) AdminURL() string { return p.admin }

// NewDatabase creates a fresh, uniquely named database and returns a
// superuser URL for it. It is dropped when t ends.
func (p *Postgres) NewDatabase(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.admin)
	if err != nil {
		t.Fatalf("connect to test postgres: %v", err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("bastion_test_%d_%d", os.Getpid(), time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, p.admin); err == nil {
			_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(ctx)
		}
	})
	cfg, err := pgx.ParseConfig(p.admin)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
}

func postgresBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("no initdb on PATH or in /usr/lib/postgresql/*/bin")
}

func versionOf(dir string) int {
	v, _ := strconv.Atoi(strings.Split(strings.TrimPrefix(dir, "/usr/lib/postgresql/"), "/")[0])
	return v
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
