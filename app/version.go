package app

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// BuildInfo is what a binary knows about how it was built, from
// runtime/debug.ReadBuildInfo: the VCS fields are there when it was built
// by `go build` or `go install` inside a git checkout (make install), and
// absent with -buildvcs=false or outside one (a container build without
// .git, `go install module@version`).
type BuildInfo struct {
	// Version is the release the binary serves as (serverInfo, the catalog).
	Version string
	// Module is the main module's version: "(devel)" or a pseudo-version
	// for a checkout, the tag for `go install …/cmd/bastion@vX`.
	Module string
	// Revision is the VCS commit; "" when the build recorded none.
	Revision string
	// Time is the commit's time (RFC 3339), "" when unknown.
	Time string
	// Modified reports whether the tree had uncommitted changes.
	Modified bool
	// GoVersion is the toolchain that built the binary.
	GoVersion string
}

// ReadBuildInfo returns this binary's BuildInfo, serving as version.
func ReadBuildInfo(version string) BuildInfo {
	b := BuildInfo{Version: version, GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.Module, b.GoVersion = bi.Main.Version, bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is what `bastion --version` prints: the version on the first
// line, then the revision (with "modified" when the tree was), the commit
// time and the toolchain.
func (b BuildInfo) String() string {
	var s strings.Builder
	fmt.Fprintf(&s, "bastion %s", b.Version)
	// A build from a checkout records the revision, and (Go 1.24 on) a
	// pseudo-version made of it; `go install …@version` records only the
	// module's version, which is then the one clue to the source.
	if b.Revision == "" && b.Module != "" && b.Module != "(devel)" {
		fmt.Fprintf(&s, " (module %s)", b.Module)
	}
	switch {
	case b.Revision == "":
		s.WriteString("\nrevision: unknown (built without VCS information)")
	case b.Modified:
		fmt.Fprintf(&s, "\nrevision: %s (modified)", b.Revision)
	default:
		fmt.Fprintf(&s, "\nrevision: %s", b.Revision)
	}
	if b.Time != "" {
		fmt.Fprintf(&s, "\ncommitted: %s", b.Time)
	}
	fmt.Fprintf(&s, "\nbuilt with: %s %s/%s", b.GoVersion, runtime.GOOS, runtime.GOARCH)
	return s.String()
}
