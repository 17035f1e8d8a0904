package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bastion-mcp/bastion/capture"
	"github.com/bastion-mcp/bastion/egress"
	"github.com/bastion-mcp/bastion/store/postgres"
	"github.com/bastion-mcp/bastion/store/sqlite"
)

// DoctorConfig says what `bastion doctor` checks besides the browser and
// the fonts, which every review needs.
type DoctorConfig struct {
	// DataDir must be writable; "" means sqlite.DefaultDataDir(), where
	// stdio and serve keep their store.
	DataDir string
	// DatabaseURL, when set, must accept a connection. The data directory
	// is then only recommended (serve keeps nothing there).
	DatabaseURL string
	// LaunchTimeout bounds the browser's start; 0 means 2 minutes (a loaded
	// machine takes long to start Chromium the first time).
	LaunchTimeout time.Duration
	// Logger receives the browser's lifecycle logs; nil discards them.
	Logger *slog.Logger
	// EnginePool, when set, is checked instead of the browser and the
	// fonts: serve reviews on those engines, so this machine needs neither.
	EnginePool *EnginePoolConfig
}

// Status is one check's verdict.
type Status int

const (
	// StatusOK: what a review needs is there.
	StatusOK Status = iota
	// StatusWarn: a review runs, but something recommended is missing
	// (the findings may then differ from the project's reference machine).
	StatusWarn
	// StatusFail: a review cannot run here until Fix is done.
	StatusFail
	// StatusSkip: not configured, so not checked.
	StatusSkip
)

func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusWarn:
		return "warn"
	case StatusFail:
		return "FAIL"
	}
	return "skip"
}

// DoctorCheck is the outcome of one check.
type DoctorCheck struct {
	Name   string // "chromium", "fonts", "data-dir", "postgres"
	Status Status
	// Detail says what was found, or why the check failed.
	Detail string
	// Fix says what to install or change on this system; "" when nothing.
	Fix string
}

// DoctorReport is what `bastion doctor` prints.
type DoctorReport struct {
	// System names this machine (GOOS/GOARCH and the distribution).
	System string
	Checks []DoctorCheck
}

// Failed reports whether a check that a review needs failed.
func (r DoctorReport) Failed() bool {
	return slices.ContainsFunc(r.Checks, func(c DoctorCheck) bool { return c.Status == StatusFail })
}

// Doctor checks what a review needs on this machine: a Chromium that the
// engine finds (capture.FindChrome) and that really starts headless behind
// the egress proxy, as a review starts it; fonts to render with; a
// writable data directory; and PostgreSQL when cfg names one. Each failure
// says what to install for this system.
func Doctor(ctx context.Context, cfg DoctorConfig) DoctorReport {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.LaunchTimeout <= 0 {
		cfg.LaunchTimeout = 2 * time.Minute
	}
	sys := thisSystem()
	if cfg.EnginePool != nil {
		return DoctorReport{System: sys.String(), Checks: []DoctorCheck{
			checkEnginePool(ctx, cfg),
			checkDataDir(cfg),
			checkPostgres(ctx, cfg.DatabaseURL, sys),
		}}
	}
	return DoctorReport{System: sys.String(), Checks: []DoctorCheck{
		checkChromium(ctx, cfg, sys),
		checkFonts(ctx, sys),
		checkDataDir(cfg),
		checkPostgres(ctx, cfg.DatabaseURL, sys),
	}}
}

// checkEnginePool builds the pool client as serve does and asks the
// engines' /readyz.
func checkEnginePool(ctx context.Context, cfg DoctorConfig) DoctorCheck {
	c := DoctorCheck{Name: "engines", Detail: fmt.Sprintf("%d engine(s)", len(cfg.EnginePool.URLs))}
	e, err := openEnginePool(egress.NewGuard(egress.Policy{Logger: cfg.Logger}, nil), *cfg.EnginePool, cfg.Logger)
	if err == nil {
		err = e.Ready(ctx)
	}
	if err != nil {
		c.Status, c.Detail = StatusFail, c.Detail+": "+err.Error()
		c.Fix = "start bastion engine serve on each --engine-url, with the installation's line of --engine-secret-file in its --secrets"
	}
	return c
}

// checkChromium finds the browser as the engine does and starts it the way
// a review does: OpenEngine (the egress proxy and the pool) and Ready.
func checkChromium(ctx context.Context, cfg DoctorConfig, sys system) DoctorCheck {
	c := DoctorCheck{Name: "chromium"}
	path, err := capture.FindChrome()
	if err != nil {
		c.Status, c.Detail, c.Fix = StatusFail, err.Error(), sys.hints().chromium
		return c
	}
	c.Detail = path
	if v := chromeVersion(ctx, path); v != "" {
		c.Detail += " (" + v + ")"
	}
	eng, err := OpenEngine(ctx, EngineConfig{Guard: egress.NewGuard(egress.Policy{Logger: cfg.Logger}, nil), Chrome: path, Logger: cfg.Logger})
	if err == nil {
		lctx, cancel := context.WithTimeout(ctx, cfg.LaunchTimeout)
		err = eng.Ready(lctx)
		cancel()
		eng.Close()
	}
	if err != nil {
		c.Status = StatusFail
		c.Detail += ": found, but it does not start headless: " + err.Error()
		c.Fix = fmt.Sprintf("run `%s --headless --no-sandbox --dump-dom about:blank` to see why (a missing shared library: reinstall the package); %s", path, sys.hints().chromium)
		return c
	}
	c.Detail += ": launched headless"
	return c
}

// chromeVersion asks the browser for its version, "" if it will not say.
func chromeVersion(ctx context.Context, path string) string {
	vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(vctx, path, "--version").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// referenceFonts are the families the tests' goldens and the demo are
// rendered with (scripts/deps.sh and deploy/Dockerfile install them).
var referenceFonts = []string{"DejaVu Sans", "Liberation Sans", "Noto Sans"}

// checkFonts fails when the machine has no font at all (every page renders
// as boxes) and warns when a reference family is missing.
func checkFonts(ctx context.Context, sys system) DoctorCheck {
	c := DoctorCheck{Name: "fonts"}
	families, how := fontFamilies(ctx, sys.goos)
	if len(families) == 0 {
		c.Status, c.Detail, c.Fix = StatusFail, "no fonts found ("+how+"): pages would render without text", sys.hints().fonts
		return c
	}
	var missing []string
	for _, f := range referenceFonts {
		if !families[f] {
			missing = append(missing, f)
		}
	}
	c.Detail = fmt.Sprintf("%d families (%s)", len(families), how)
	if len(missing) > 0 {
		c.Status, c.Fix = StatusWarn, sys.hints().fonts
		c.Detail += "; missing " + strings.Join(missing, ", ") + ", which the reference renderings use"
		return c
	}
	c.Detail += "; " + strings.Join(referenceFonts, ", ") + " present"
	return c
}

// fontFamilies lists the installed font families: fontconfig's, which is
// what Chromium uses on Linux, or else the names of the files in the font
// directories. how says which.
func fontFamilies(ctx context.Context, goos string) (map[string]bool, string) {
	families := map[string]bool{}
	if out, err := exec.CommandContext(ctx, "fc-list", ":", "family").Output(); err == nil {
		for line := range strings.Lines(string(out)) {
			for f := range strings.SplitSeq(line, ",") {
				if f = strings.TrimSpace(f); f != "" {
					families[f] = true
				}
			}
		}
		return families, "fc-list"
	}
	dirs := fontDirs(goos)
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				if f := familyOfFile(e.Name()); f != "" {
					families[f] = true
				}
			}
			return nil
		})
	}
	return families, "files in " + strings.Join(dirs, ", ")
}

// familyOfFile guesses a family from a font file's name ("DejaVuSans-Bold.ttf"
// is "DejaVu Sans"), enough to tell the reference families apart; "" when
// the file is no font.
func familyOfFile(name string) string {
	ext := strings.ToLower(filepath.Ext(name))
	if !slices.Contains([]string{".ttf", ".otf", ".ttc", ".otc", ".woff", ".woff2", ".pfb"}, ext) {
		return ""
	}
	base, _, _ := strings.Cut(strings.TrimSuffix(name, filepath.Ext(name)), "-")
	for _, f := range referenceFonts {
		if base == strings.ReplaceAll(f, " ", "") {
			return f
		}
	}
	return base
}

// fontDirs are where fonts are installed on goos.
func fontDirs(goos string) []string {
	home, _ := os.UserHomeDir()
	if goos == "darwin" {
		return []string{"/System/Library/Fonts", "/Library/Fonts", filepath.Join(home, "Library", "Fonts")}
	}
	return []string{"/usr/share/fonts", "/usr/local/share/fonts", filepath.Join(home, ".local", "share", "fonts"), filepath.Join(home, ".fonts")}
}

// checkDataDir creates the data directory if needed and writes, syncs and
// removes a file in it, as the store will.
func checkDataDir(cfg DoctorConfig) DoctorCheck {
	c := DoctorCheck{Name: "data-dir"}
	fail := StatusFail
	if cfg.DatabaseURL != "" {
		fail = StatusWarn // serve keeps its store on PostgreSQL
	}
	dir := cfg.DataDir
	if dir == "" {
		d, err := sqlite.DefaultDataDir()
		if err != nil {
			c.Status, c.Detail, c.Fix = fail, err.Error(), "set XDG_DATA_HOME or HOME, or pass --data-dir"
			return c
		}
		dir = d
	}
	if err := writeProbe(dir); err != nil {
		c.Status, c.Detail = fail, err.Error()
		c.Fix = "make " + dir + " writable by this user (or free space on its disk), or pass --data-dir with a writable directory"
		return c
	}
	c.Detail = dir + " is writable"
	return c
}

// writeProbe writes one synced file in dir (creating dir) and removes it.
func writeProbe(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".bastion-doctor-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString("bastion doctor\n")
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// checkPostgres connects to url and asks the server who and what it is.
// The password never reaches the report.
func checkPostgres(ctx context.Context, url string, sys system) DoctorCheck {
	c := DoctorCheck{Name: "postgres"}
	if url == "" {
		c.Status, c.Detail = StatusSkip, "not configured (--database-url)"
		return c
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var user string
	conn, err := pgx.Connect(cctx, url)
	if err == nil {
		err = conn.QueryRow(cctx, "SELECT current_user").Scan(&user)
		c.Detail = fmt.Sprintf("connected as %s to PostgreSQL %s", user, conn.PgConn().ParameterStatus("server_version"))
		conn.Close(context.WithoutCancel(ctx))
	}
	if err != nil {
		msg := err.Error()
		if strings.Contains(msg, "cannot parse") {
			msg = "malformed database URL" // pgx's parse errors can quote the URL
		}
		for _, p := range postgres.Passwords(url) {
			if p != "" {
				msg = strings.ReplaceAll(msg, p, "[redacted]")
			}
		}
		c.Status, c.Detail = StatusFail, msg
		c.Fix = "check --database-url (host, port, user, password, database) and that the server accepts connections; " + sys.hints().postgres
	}
	return c
}

// system is the machine the hints are for.
type system struct {
	goos, goarch string
	osRelease    map[string]string // /etc/os-release; nil when absent
}

func thisSystem() system {
	s := system{goos: runtime.GOOS, goarch: runtime.GOARCH}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		s.osRelease = parseOSRelease(string(b))
	}
	return s
}

func (s system) String() string {
	out := s.goos + "/" + s.goarch
	if name := s.osRelease["PRETTY_NAME"]; name != "" {
		out += ", " + name
	}
	return out
}

// parseOSRelease reads os-release(5): KEY=value lines, values maybe quoted.
func parseOSRelease(text string) map[string]string {
	m := map[string]string{}
	for line := range strings.Lines(text) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		m[k] = strings.Trim(v, `"'`)
	}
	return m
}
