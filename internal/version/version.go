// Package version reports which Tollgate build is running: the version and commit stamped by the
// linker (`-ldflags "-X github.com/tollgate-dev/tollgate/internal/version.version=v0.3.0 ..."`, as
// `make build` and the Dockerfile do), else what the Go toolchain recorded in the binary (the module
// version of `go install ...@v0.3.0`, the VCS revision of a build from a git checkout).
package version

import (
	"runtime"
	"runtime/debug"
)

// Set by the linker; empty in a plain `go build`.
var (
	version string
	commit  string
)

// Info describes the running binary.
type Info struct {
	// Version is the release (e.g. v0.3.0), "(devel)" for an untagged build.
	Version string `json:"version"`
	// Commit is the git revision it was built from, "" when unknown.
	Commit string `json:"commit,omitempty"`
	// Modified is true when the working tree had uncommitted changes.
	Modified bool `json:"modified,omitempty"`
	// GoVersion is the Go toolchain that built it.
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}

// Get returns the running binary's Info.
func Get() Info {
	info := Info{Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		info = fromBuildInfo(info, bi)
	}
	if info.Version == "" {
		info.Version = "(devel)"
	}
	return info
}

// fromBuildInfo fills what the linker did not set from the toolchain's build info.
func fromBuildInfo(info Info, bi *debug.BuildInfo) Info {
	if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		info.Version = bi.Main.Version
	}
	if info.Commit != "" {
		return info
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Commit = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// String is the one-line form: "v0.3.0 (commit 1a2b3c4, go1.26.8, linux/amd64)".
func (i Info) String() string {
	s := i.Version + " ("
	if i.Commit != "" {
		c := i.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		s += "commit " + c
		if i.Modified {
			s += "-dirty"
		}
		s += ", "
	}
	return s + i.GoVersion + ", " + i.Platform + ")"
}
